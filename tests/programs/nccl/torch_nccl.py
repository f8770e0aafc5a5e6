"""PyTorch's bundled NCCL through the plugin: under torchrun with two
processes, all-reduce, all-gather, reduce-scatter, broadcast and a
send/receive between ranks 0 and 1, printing expect lines as
nccl_test.cu does (float32, 262144 elements per rank, 3 iterations)."""

import os

import torch
import torch.distributed as dist

COUNT = 262144
ITERS = 3


def main():
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    x = torch.full((COUNT,), float(rank + 1), device="cuda")
    for _ in range(ITERS):
        dist.all_reduce(x.clone())
        out = torch.empty(COUNT * n, device="cuda")
        dist.all_gather_into_tensor(out, x)
        dist.reduce_scatter_tensor(torch.empty(COUNT, device="cuda"), torch.ones(COUNT * n, device="cuda"))
        dist.broadcast(x.clone(), src=0)
        if n >= 2 and rank <= 1:
            peer = 1 - rank
            ops = [dist.P2POp(dist.isend, x, peer), dist.P2POp(dist.irecv, torch.empty_like(x), peer)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
    torch.cuda.synchronize()
    b = COUNT * 4
    print(f"expect rank={rank} op=ncclAllReduce calls={ITERS} count={COUNT} bytes_sent={b} bytes_received={b}")
    print(f"expect rank={rank} op=ncclAllGather calls={ITERS} count={COUNT} bytes_sent={b} bytes_received={b * n}")
    print(f"expect rank={rank} op=ncclReduceScatter calls={ITERS} count={COUNT} bytes_sent={b * n} bytes_received={b}")
    sent, received = (b, 0) if rank == 0 else (0, b)
    print(f"expect rank={rank} op=ncclBroadcast calls={ITERS} count={COUNT} bytes_sent={sent} bytes_received={received} root=0")
    if n >= 2 and rank <= 1:
        print(f"expect rank={rank} op=ncclSend calls={ITERS} peer={1 - rank} count={COUNT} bytes={b}")
        print(f"expect rank={rank} op=ncclRecv calls={ITERS} peer={1 - rank} count={COUNT} bytes={b}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
