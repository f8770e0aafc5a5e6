# Benchmark program (GPU side) for bench/gpu.sh: the cost of tracing a
# PyTorch program, per small op and per DDP training step.
#
#   python3 torch_bench.py op [N]        N small ops (x.add_(1)) on the GPU
#   torchrun --standalone --nproc-per-node 1 torch_bench.py ddp [STEPS]
#       a DDP step with one rank (NCCL): 8 Linear layers of 2048, batch 256,
#       SGD; 20 warm-up steps, then STEPS timed ones
#
# With BENCH_KINETO=1 the timed part runs under the PyTorch profiler
# (Kineto, CPU and CUDA activities) and the trace is exported afterwards,
# as a user of the PyTorch profiler would do.
#
# Prints "us_per_op X" or "ms_per_step X", then "work_end_ns T": the
# CLOCK_MONOTONIC time at which the program's work (and for Kineto, its
# trace export) ended, so that the caller can time what follows the work
# (the interpreter's exit, the tracer's archive).
import os
import sys
import time

import torch


def timed(body, warmup, count):
    for _ in range(warmup):
        body()
    torch.cuda.synchronize()
    kineto = os.environ.get("BENCH_KINETO") == "1"
    profiler = None
    if kineto:
        from torch.profiler import ProfilerActivity, profile

        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.__enter__()
    t0 = time.perf_counter()
    for _ in range(count):
        body()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    if profiler is not None:
        profiler.__exit__(None, None, None)
        t = time.perf_counter()
        profiler.export_chrome_trace(os.environ.get("BENCH_KINETO_TRACE", "/tmp/kineto-trace.json"))
        print(f"kineto_export_s {time.perf_counter() - t:.3f}")
    return elapsed


def small_ops(n):
    x = torch.zeros(1024, device="cuda")
    elapsed = timed(lambda: x.add_(1), 1000, n)
    print(f"us_per_op {elapsed / n * 1e6:.3f}")


def ddp(steps):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("nccl")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers).cuda())
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(256, 2048, device="cuda")

    def step():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    elapsed = timed(step, 20, steps)
    print(f"ms_per_step {elapsed / steps * 1e3:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "op"
    if what == "op":
        small_ops(int(sys.argv[2]) if len(sys.argv) > 2 else 20000)
    else:
        ddp(int(sys.argv[2]) if len(sys.argv) > 2 else 150)
    print(f"work_end_ns {time.monotonic_ns()}", flush=True)
