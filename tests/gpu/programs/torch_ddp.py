# GPU test program: a PyTorch DDP training loop with one process per GPU,
# for `gputrace torchrun --nproc-per-node 2`. Its gradients are all-reduced
# by NCCL every step; it prints the bytes of gradients per step so that
# the archive's NCCL all-reduces can be checked against them.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
rank = dist.get_rank()
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local % torch.cuda.device_count())
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
ddp = DDP(model, bucket_cap_mb=1)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
steps = int(os.environ.get("STEPS", "10"))
for _ in range(steps):
    x = torch.randn(64, 512, device="cuda")
    loss = ddp(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
print(f"expect rank {rank} steps {steps} grad_bytes {grad_bytes} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
