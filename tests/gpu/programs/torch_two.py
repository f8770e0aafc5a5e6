# GPU test program: a 2-process PyTorch job for torchrun. Each process
# multiplies matrices on its GPU (LOCAL_RANK modulo the GPUs there are),
# copies results back, and prints what it did.
import os

import torch

rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", "0"))
device = torch.device("cuda", local % torch.cuda.device_count())
torch.cuda.set_device(device)
a = torch.randn(1024, 1024, device=device)
b = torch.randn(1024, 1024, device=device)
for _ in range(10):
    a = torch.tanh(a @ b)
host = a.cpu()
torch.cuda.synchronize()
print(f"expect rank {rank} device {device.index} checksum {float(host.sum()):.3f}", flush=True)
