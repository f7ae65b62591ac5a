"""Issue 41, wait-for graph: `.item()` three Python calls deep behind a kernel that never ends.

generate -> decode_step -> sample_next -> .item(); torch.cuda._sleep(2**62) is the kernel. The
verdict must name the kernel as the root and sample_next's line (a Python line, not libtorch's
redispatch) as the waiter. Every op runs once first: with lazy module loading a first launch
behind the spin kernel would hang in the launch instead (graph_lazy_launch.cu is that shape).
"""

import os
import sys

import torch


def sample_next(logits: torch.Tensor) -> int:
    return int(logits.argmax().item())  # rocplay-test: item line


def decode_step(logits: torch.Tensor) -> int:
    return sample_next(logits * 2.0)  # rocplay-test: decode line


def generate(logits: torch.Tensor) -> int:
    return decode_step(logits + 1.0)  # rocplay-test: generate line


def main() -> None:
    logits = torch.randn(4096, device="cuda")
    generate(logits)  # every kernel loaded once
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    torch.cuda._sleep(1 << 62)
    print(f"ready pid={os.getpid()} .item() three calls deep behind spin_kernel", flush=True)
    generate(logits)  # never returns
    sys.exit(1)


if __name__ == "__main__":
    main()
