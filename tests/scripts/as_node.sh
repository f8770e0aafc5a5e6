#!/bin/sh
# Runs "$@" as if on a node of its own: rank r of the job is on node
# r / RANKS_PER_NODE, with that node's host name, boot id and a
# CLOCK_MONOTONIC set NODE_SECONDS * node seconds ahead (Linux UTS, mount
# and time namespaces; root only).
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
node=$((rank / ${RANKS_PER_NODE:-2}))
offset=$((node * ${NODE_SECONDS:-7}))
dir=${NODE_DIR:?a directory for the boot ids}
printf '%08d-0000-4000-8000-%012d\n' "$node" "$node" >"$dir/boot_id.$rank"
exec unshare --uts --mount --time --fork --monotonic "$offset" --boottime "$offset" \
  sh -c 'hostname "simnode$1" && mount --bind "$2" /proc/sys/kernel/random/boot_id && shift 2 && exec "$@"' \
  sh "$node" "$dir/boot_id.$rank" "$@"
