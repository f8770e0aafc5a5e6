"""GPU test program: NVTX from PyTorch — torch.cuda.nvtx ranges around
training steps and torch.autograd.profiler.emit_nvtx over a small model.
Prints the ground truth as "expect <key> <value>" lines for
tests/gpu/check_archives.py. Usage: torch_nvtx.py STEPS"""

import sys

import torch


def main(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    for _ in range(steps):
        torch.cuda.nvtx.range_push("train step")
        torch.cuda.nvtx.range_push("forward")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        opt.zero_grad()
        loss.backward()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.mark("step done")
        opt.step()
        torch.cuda.nvtx.range_pop()
    with torch.autograd.profiler.emit_nvtx():
        with torch.cuda.nvtx.range("emit_nvtx step"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
    torch.cuda.synchronize()
    print(f"expect range train step {steps}")
    print(f"expect range forward {steps}")
    print(f"expect range backward {steps}")
    print("expect range emit_nvtx step 1")


if __name__ == "__main__":
    main(int(sys.argv[1]))
