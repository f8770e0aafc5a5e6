# Benchmark program (GPU side) for bench/gpu-ddp.sh: DDP training steps
# with a rank per GPU, under torchrun --nproc-per-node N.
#
#   big:   a GPU-bound step, a 12-layer transformer encoder (d_model 1024,
#          16 heads, FFN 4096), bf16 autocast, batch 16 x 512 tokens, AdamW
#          (about 1,100 kernels and a gradient all-reduce per bucket a step)
#   small: a launch-bound step, 8 Linear layers of 2048, batch 256, SGD
#
# Usage: torchrun --standalone --nproc-per-node N ddp_steps.py [big|small|both] [STEPS]
# Rank 0 prints "ms_per_step <model> <median over ranks' medians>", each
# rank's median of STEPS timed steps after 10 warm-up steps (each step
# ends with torch.cuda.synchronize(), so a step is its GPU time too), and
# "issue_ms_per_step <model> ...", the same of the host's time to issue a
# step's work (until the step returns, before the synchronization): close
# to ms_per_step, the step is bound by the host's launches, not the GPU.
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def big():
    layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).cuda()
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    x = torch.randn(16, 512, 1024, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = ddp(x).float().square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def small():
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(256, 2048, device="cuda")

    def step():
        loss = ddp(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def timed(step, steps):
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    times, issue = [], []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        issue.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), statistics.median(issue)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    dist.init_process_group("nccl")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local % torch.cuda.device_count())
    torch.manual_seed(0)
    for name, make in (("small", small), ("big", big)):
        if which not in (name, "both"):
            continue
        ms, issue = timed(make(), steps)
        mine = torch.tensor([ms, issue], device="cuda")
        every = [torch.zeros(2, device="cuda") for _ in range(dist.get_world_size())]
        dist.all_gather(every, mine)
        if dist.get_rank() == 0:
            print(f"ms_per_step {name} {statistics.median(float(t[0]) for t in every):.3f}", flush=True)
            print(f"issue_ms_per_step {name} {statistics.median(float(t[1]) for t in every):.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
