"""Test driver: run a training script seeded, record every F.cross_entropy loss to LOSSES.

python drive.py LOSSES [--cuda-on-cpu] SCRIPT ARGS...  (LOSSES.RANK under torchrun;
--cuda-on-cpu lets an original CUDA script run on a CPU: Tensor.cuda keeps the tensor,
torch.cuda.synchronize and memory queries answer trivially; everything else of the script
is unchanged)."""

import json
import os
import runpy
import sys

import torch
import torch.nn.functional as F

# The samples fall back to synthetic data without torchvision: never download a dataset.
sys.modules["torchvision"] = None
out, args = sys.argv[1], sys.argv[2:]
if "RANK" in os.environ:  # under torchrun: one file per rank
    out = f"{out}.{os.environ['RANK']}"
if args[0] == "--cuda-on-cpu":
    args = args[1:]
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.max_memory_allocated = lambda *a, **k: 0
losses = []
_ce = F.cross_entropy


depth = [0]


def cross_entropy(*a, **k):
    depth[0] += 1
    try:
        loss = _ce(*a, **k)
    finally:
        depth[0] -= 1
    if not depth[0]:
        losses.append(float(loss.detach().cpu()))
    return loss


F.cross_entropy = cross_entropy
torch.manual_seed(0)
sys.argv = args
sys.path.insert(0, ".")
try:
    runpy.run_path(args[0], run_name="__main__")
finally:
    with open(out, "w") as fh:
        json.dump(losses, fh)
