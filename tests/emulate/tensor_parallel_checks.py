"""Runs by torchrun inside ``migrate run --emulate npu`` (test_distributed.py): the
tensor-parallel pattern, with no ``init_process_group`` call (``init_device_mesh`` makes
the default group itself): a collective on the mesh's group, then an MLP split by
``parallelize_module`` (column-wise, then row-wise) and trained three SGD steps.

python tensor_parallel_checks.py OUT_DIR  -> OUT_DIR/results.RANK.json, OUT_DIR/tp_start.pt
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from sgd_steps import sgd_steps  # a sibling module: this program runs by path
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

OUT = Path(sys.argv[1])
STEPS = 3


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))


def train(mesh, rank: int) -> list[float]:
    torch.manual_seed(0)  # every rank builds the same model and batch
    model = mlp().to("npu")
    x, target = torch.randn(4, 8, device="npu"), torch.randn(4, 8, device="npu")
    if rank == 0:
        start = {k: v.cpu() for k, v in model.state_dict().items()}
        torch.save({"params": start, "x": x.cpu(), "target": target.cpu()}, OUT / "tp_start.pt")
    model = parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    return sgd_steps(model, nn.functional.mse_loss, x, target, STEPS)


def main() -> None:
    mesh = init_device_mesh("npu", (int(os.environ["WORLD_SIZE"]),))
    rank = dist.get_rank()
    summed = torch.full((3,), float(rank + 1), device="npu")
    dist.all_reduce(summed, group=mesh.get_group())
    pieces = [torch.full((2,), float(r), device="npu") for r in range(dist.get_world_size())]
    got = torch.empty(2, device="npu")
    dist.scatter(got, pieces if rank == 0 else None, src=0)
    results = {
        "all_reduce": summed.cpu().tolist(),
        "scatter": got.cpu().tolist(),
        "device": str(summed.device),
        "tp": train(mesh, rank),
    }
    (OUT / f"results.{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
