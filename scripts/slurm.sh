#!/usr/bin/env bash
# Starts a one-node Slurm on this machine (as root, Debian's slurmctld,
# slurmd and munge packages, which scripts/setup.sh installs), for the
# tests that run gputrace under srun (crates/gputrace/tests/integration/
# slurm.rs): munged, slurmctld and slurmd as plain daemons (no systemd),
# one node named after this host with 256 CPUs (oversubscribed: the tests
# run more ranks than there are cores), srun's default PMI none (Open
# MPI's ranks need --mpi=pmix, MPICH's --mpi=pmi2).
#
# Safe to run again, and fast when Slurm already answers (well under a
# second; about 3 s to start it). A slurm.conf that this script did not
# write is never touched: where a real Slurm is configured, it is used as
# it is, or this script fails saying so.
set -euo pipefail

conf=/etc/slurm/slurm.conf
marker="# gputrace: a one-node Slurm for the tests (scripts/slurm.sh)"
host=$(hostname -s)

answers() {
  # The node is there and can take work.
  timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | grep -Eq "^$host (idle|mixed|allocated)"
}

for tool in munged slurmctld slurmd sinfo srun; do
  command -v "$tool" >/dev/null || {
    echo "[slurm] $tool is missing: apt-get install munge slurmctld slurmd slurm-client (scripts/setup.sh)" >&2
    exit 1
  }
done

want=$(
  cat <<EOF
$marker
ClusterName=gputrace
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SchedulerType=sched/builtin
NodeName=$host CPUs=256 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
)

if [[ -f $conf ]] && ! head -1 "$conf" | grep -qxF "$marker"; then
  if answers; then
    exit 0
  fi
  echo "[slurm] $conf is not this script's and Slurm does not answer; not touched" >&2
  exit 1
fi

changed=0
if [[ ! -f $conf ]] || [[ "$(cat "$conf")" != "$want" ]]; then
  mkdir -p /etc/slurm
  printf '%s\n' "$want" >"$conf.tmp"
  mv "$conf.tmp" "$conf"
  changed=1
fi
if ((!changed)) && answers; then
  exit 0
fi

mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
chown munge:munge /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [[ -s /etc/munge/munge.key ]] || { echo "[slurm] /etc/munge/munge.key is missing" >&2; exit 1; }
  su -s /bin/sh munge -c munged
fi

# A daemon of ours still running with another configuration: stop it (by
# its pid file), then start both.
running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
for d in slurmd slurmctld; do
  if ((changed)) && running "/run/$d.pid"; then
    kill "$(cat "/run/$d.pid")"
    for _ in $(seq 50); do running "/run/$d.pid" || break; sleep 0.1; done
  fi
done
running /run/slurmctld.pid || slurmctld
running /run/slurmd.pid || slurmd

for _ in $(seq 100); do
  answers && exit 0
  # A node that was down when slurmctld last saw it comes back.
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 0.1
done
echo "[slurm] the node $host did not come up; see /var/log/slurm/" >&2
sinfo -N >&2 || true
exit 1
