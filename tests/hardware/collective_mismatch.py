"""Two ranks call different collectives: rank 0 all_reduce, rank 1 all_gather_into_tensor.

After one good all_reduce, a branch taken differently on each rank sends rank 0 into
`dist.all_reduce` and rank 1 into `dist.all_gather_into_tensor`. NCCL does not check that peers
run the same collective: rank 1's all_gather may return (or wait), rank 0's AllReduce kernel
waits for its peer. Launch with torchrun --nproc-per-node 2. Each rank writes `<beats> <steps>`
to STATUS_DIR/rank<N>.status from a heartbeat thread.
"""

import os
import threading
import time

import torch
import torch.distributed as dist

from status_heartbeat import heartbeat


def decode_step(rank: int, x: torch.Tensor) -> None:
    if rank == 0:
        dist.all_reduce(x)
    else:
        out = torch.empty(2 * x.numel(), device="cuda")
        dist.all_gather_into_tensor(out, x)
    print(f"ready pid={os.getpid()} rank={rank} in decode_step", flush=True)
    torch.cuda.synchronize()


def main() -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    state = {"steps": 0}
    threading.Thread(target=heartbeat,
                     args=(f"{os.environ.get('STATUS_DIR', '/tmp')}/rank{rank}.status", state),
                     daemon=True).start()
    x = torch.ones(1 << 22, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    state["steps"] = 1
    decode_step(rank, x)
    state["steps"] = 2
    while True:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
