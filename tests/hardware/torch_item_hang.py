"""A PyTorch process whose main thread blocks in `.item()` behind a GPU kernel that never ends.

torch.cuda._sleep launches a spin kernel for the given number of cycles; 2**62 cycles is forever.
Used for the fast-attach measurement (host symbols of libtorch make a normal attach slow) and as
the PyTorch form of scenario 5 (host blocked on the GPU in _local_scalar_dense).
"""

import os
import sys

import torch


def main() -> None:
    x = torch.randn(1024, 1024, device="cuda")
    y = x @ x  # load cuBLAS, as a serving process would have
    # Run every op once before the GPU is stuck: with lazy module loading (PyTorch's default) the
    # first launch of a kernel loads its module, and that waits for the running spin kernel.
    (y.sum() + 1.0).item()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    torch.cuda._sleep(1 << 62)
    z = y.sum() + 1.0
    print(f"ready pid={os.getpid()} torch main thread in .item() behind spin_kernel", flush=True)
    print(z.item(), flush=True)  # never returns
    sys.exit(1)


if __name__ == "__main__":
    main()
