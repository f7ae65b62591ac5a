"""A serving stack's process tree: server -> engine core -> N spawn workers, one rank skipping.

The server (this process) starts an engine-core process, which spawns --tp N GPU workers (the
`spawn` start method, as vLLM and SGLang use). Each worker joins an NCCL group and runs
all_reduce steps; the worker of --skip-rank R skips the last step (its batch was empty) and
waits in `wait_for_batch`, so every other rank's AllReduce kernel waits for it forever.
The server prints `ready pid=SERVER tp=N skip=R workers=PID,PID,...` once every worker has
reached its last step; triage it with `rocplay run hang-triage --workers-of SERVER`.
Each worker writes `<beats> <steps>` to STATUS_DIR/rank<N>.status from a heartbeat thread.

Usage: python3 server_tree.py [--tp N] [--skip-rank R] [--port P]
"""

import argparse
import os
import threading
import time

import torch.multiprocessing as mp

from status_heartbeat import heartbeat


def wait_for_batch(state: dict) -> None:
    while True:  # the scheduler never sends this rank its batch
        time.sleep(0.1)


def worker(rank: int, tp: int, skip: int, port: int, ready) -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ["RANK"] = str(rank)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(tp)
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=tp, device_id=torch.device("cuda", rank))
    state = {"steps": 0}
    threading.Thread(target=heartbeat,
                     args=(f"{os.environ.get('STATUS_DIR', '/tmp')}/rank{rank}.status", state),
                     daemon=True).start()
    t = torch.ones(1 << 20, device="cuda")
    for step in range(3):
        dist.all_reduce(t)
        state["steps"] = step + 1
    torch.cuda.synchronize()
    if rank == skip:
        ready.put((rank, os.getpid()))
        wait_for_batch(state)
    dist.all_reduce(t)  # waits for the skipping rank forever
    ready.put((rank, os.getpid()))
    torch.cuda.synchronize()


def engine_core(tp: int, skip: int, port: int, ready) -> None:
    ctx = mp.get_context("spawn")
    procs = []
    for r in range(tp):
        # In the environment the worker starts with, where /proc/PID/environ shows it (a
        # launcher's RANK, as torchrun and vLLM set it).
        os.environ.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(tp))
        p = ctx.Process(target=worker, args=(r, tp, skip, port, ready), name=f"worker{r}")
        p.start()
        procs.append(p)
    for p in procs:
        p.join()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--skip-rank", type=int, default=1)
    ap.add_argument("--port", type=int, default=29531)
    a = ap.parse_args()
    ctx = mp.get_context("spawn")
    ready = ctx.Queue()
    core = ctx.Process(target=engine_core, args=(a.tp, a.skip_rank, a.port, ready),
                       name="engine_core")
    core.start()
    pids = {}
    while len(pids) < a.tp:
        rank, pid = ready.get()
        pids[rank] = pid
    workers = ",".join(str(pids[r]) for r in sorted(pids))
    print(f"ready pid={os.getpid()} tp={a.tp} skip={a.skip_rank} workers={workers}", flush=True)
    core.join()


if __name__ == "__main__":
    main()
