"""Issue 41, wait-for graph: two ranks each blocked in an all_reduce on a different process group.

Groups A and B both hold ranks 0 and 1. Both communicators are warmed up in the same order first
(so neither hangs in its init); then rank 0 reduces on A then B, rank 1 on B then A. Rank 0's
AllReduce on A waits for rank 1, which waits in its AllReduce on B for rank 0: an order deadlock,
a cycle across ranks, each rank at a different Python line. Launch with
`torchrun --nproc-per-node 2 graph_group_order.py`; each rank prints `ready pid=P rank=R`.
"""

import os
import time

import torch
import torch.distributed as dist


def reduce_on(group, x: torch.Tensor) -> None:
    dist.all_reduce(x, group=group)
    torch.cuda.synchronize()  # rocplay-test: sync line


def step_rank0(a, b, x: torch.Tensor) -> None:
    reduce_on(a, x)  # rocplay-test: rank0 group A line
    reduce_on(b, x)


def step_rank1(a, b, x: torch.Tensor) -> None:
    reduce_on(b, x)  # rocplay-test: rank1 group B line
    reduce_on(a, x)


def main() -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    group_a = dist.new_group([0, 1])
    group_b = dist.new_group([0, 1])
    x = torch.ones(1 << 22, device="cuda")
    for group in (group_a, group_b):  # both communicators up, same order on both ranks
        dist.all_reduce(x, group=group)
    torch.cuda.synchronize()
    print(f"ready pid={os.getpid()} rank={rank} torchrun_pid={os.getppid()}", flush=True)
    time.sleep(1.0)
    if rank == 0:
        step_rank0(group_a, group_b, x)
    else:
        step_rank1(group_a, group_b, x)
    print(f"rank {rank}: no deadlock", flush=True)


if __name__ == "__main__":
    main()
