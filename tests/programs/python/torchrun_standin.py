#!/usr/bin/python3
"""A stand-in for PyTorch's `torchrun`, for the test that sampling reaches
torchrun's workers and only them (crates/gputrace/tests/integration/
sampling_torchrun.rs): linked as `torchrun`, so that gputrace takes it for
torchrun, it starts `--nproc-per-node N` workers of `python3 SCRIPT ARGS`
with the variables torchrun's agent sets for each worker and not for
itself (torch/distributed/elastic/agent/server/local_elastic_agent.py:
LOCAL_RANK, RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID, ...; the agent sets
TORCHELASTIC_SIGNALS_TO_HANDLE on itself), as its SubprocessHandler does
(the agent's environment and the worker's). Torch itself is not needed:
this tests gputrace's side, not torch's. It spins CPU time of its own in
`launcher_spin` before and while its workers run, so that it would have
samples if the sampler were not dormant in it."""

import os
import subprocess
import sys
import time


def launcher_spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main():
    args = sys.argv[1:]
    n = int(args[args.index("--nproc-per-node") + 1])
    script = args[args.index("--nproc-per-node") + 2:]
    os.environ["TORCHELASTIC_SIGNALS_TO_HANDLE"] = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    preload = os.environ.get("LD_PRELOAD", "")
    print("standin: the launcher preloads the sampler:", "libgputrace_sampling.so" in preload, flush=True)
    launcher_spin(0.2)
    workers = []
    for rank in range(n):
        env = dict(os.environ)
        env.update({"LOCAL_RANK": str(rank), "RANK": str(rank), "WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n),
                    "GROUP_RANK": "0", "ROLE_RANK": str(rank), "ROLE_NAME": "default", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": "29500", "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
                    "TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_USE_AGENT_STORE": "False"})
        workers.append(subprocess.Popen([sys.executable, *script], env=env, start_new_session=True))
    launcher_spin(0.2)
    sys.exit(max(w.wait() for w in workers))


if __name__ == "__main__":
    main()
