# The seeds' PyTorch fault (launch --verify, issue 48): index_copy_ with an index past the
# destination's size trips the kernel's bound assert in every run, blocking launches or not.
import torch

dst = torch.zeros(1024, 64, device="cuda")
src = torch.ones(8, 64, device="cuda")
idx = torch.arange(8, device="cuda") * 200  # 1400 > 1023: out of bounds


def write_rows():
    dst.index_copy_(0, idx, src)  # FAULT: index_copy_ bound assert
    torch.cuda.synchronize()


write_rows()
print("index_copy_oob: no fault")
