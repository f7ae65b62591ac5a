"""Scenario 3: two GPUs, one rank skips a collective.

Rank 0 calls all_reduce for step 3; rank 1 skipped that step (a data-dependent branch, as when
one rank's batch was empty) and waits on the host. Rank 0's NCCL kernel spins on the GPU waiting
for its peer; rank 1 has no collective in flight. Launch with torchrun --nproc-per-node 2.
Each rank writes `<beats> <steps>` to STATUS_DIR/rank<N>.status from a heartbeat thread.
"""

import os
import threading
import time

import torch
import torch.distributed as dist

from status_heartbeat import heartbeat


def main() -> None:
    # NVLink multicast must stay off on the shared hosts.
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    state = {"steps": 0}
    status_dir = os.environ.get("STATUS_DIR", "/tmp")
    threading.Thread(target=heartbeat, args=(f"{status_dir}/rank{rank}.status", state),
                     daemon=True).start()
    t = torch.ones(1 << 20, device="cuda")
    for step in range(3):
        dist.all_reduce(t)
        state["steps"] = step + 1
    torch.cuda.synchronize()
    if rank == 1:
        # The skipped collective: rank 1 never calls all_reduce for step 3.
        print(f"ready pid={os.getpid()} rank=1 skipped all_reduce step 3", flush=True)
        while True:
            time.sleep(0.1)
    dist.all_reduce(t)  # rank 0: enqueued, its kernel waits for rank 1 forever
    print(f"ready pid={os.getpid()} rank=0 in all_reduce step 3", flush=True)
    while True:
        time.sleep(0.1)  # the host stays responsive; the GPU kernel is what hangs


if __name__ == "__main__":
    main()
