"""A HEALTHY data-parallel job for the do-no-harm checks (issue 40): each step runs ten 8192x8192
matmuls, an all_reduce of 64 MB and a synchronize, forever, and then writes its step count to
STEP_DIR/rankR.step (replaced atomically). A look did no harm only if every rank's step count still
rises after the debugger has gone: a heartbeat thread or a process state cannot tell a job frozen in
a collective from a running one.
"""

import os

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
w = torch.randn(8192, 8192, device="cuda")
g = torch.randn(1 << 24, device="cuda")
path = os.path.join(os.environ.get("STEP_DIR", "/tmp"), f"rank{rank}.step")
print(f"ready pid={os.getpid()} rank={rank}", flush=True)
step = 0
while True:
    for _ in range(10):
        y = w @ w
    dist.all_reduce(g)
    torch.cuda.synchronize()
    step += 1
    with open(path + ".tmp", "w") as f:
        f.write(f"{step}\n")
    os.replace(path + ".tmp", path)
