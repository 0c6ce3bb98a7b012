"""Runs by torchrun inside ``migrate run --emulate npu`` (test_distributed.py): random ops
on DTensors (DTensor's OffsetBasedRNGTracker reads and sets ``torch.npu``'s RNG state),
and an FSDP2 model built on the meta device, sharded with ``fully_shard``, initialised by
``reset_parameters()`` and trained three SGD steps, as pytorch/examples' FSDP2 script does.

python dtensor_checks.py OUT_DIR  -> OUT_DIR/results.RANK.json, OUT_DIR/fsdp_start.pt (rank 0)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from sgd_steps import sgd_steps  # a sibling module: this program runs by path
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

OUT = Path(sys.argv[1])
STEPS = 3


def rng_round_trip() -> dict:
    """A state handed out and set again gives the same draws; its form is torch_npu's."""
    state = torch.npu.get_rng_state()
    first = torch.randn(5, device="npu").cpu()
    torch.npu.set_rng_state(state.to("npu"))  # the tracker hands states back on the device
    again = torch.randn(5, device="npu").cpu()
    return {"bytes": state.numel(), "dtype": str(state.dtype), "same": torch.equal(first, again)}


def dtensor_random(mesh) -> dict:
    torch.manual_seed(0)
    sharded = distribute_tensor(torch.empty(8, 4, device="npu"), mesh, [Shard(0)])
    sharded.normal_()
    replicated = distribute_tensor(torch.empty(6, device="npu"), mesh, [Replicate()])
    replicated.uniform_()
    return {
        "local": sharded.to_local().cpu().tolist(),
        "full": sharded.full_tensor().cpu().tolist(),
        "replicated": replicated.to_local().cpu().tolist(),
    }


def fsdp2(mesh, rank: int) -> list[float]:
    torch.manual_seed(0)
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.to_empty(device="npu")
    for layer in (model[0], model[2]):
        layer.reset_parameters()  # init.kaiming_uniform_ / uniform_ on DTensors
    x = torch.randn(8, 16, device="npu")
    y = torch.randint(0, 4, (8,), device="npu")
    start = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    if rank == 0:
        torch.save({"params": start, "x": x.cpu(), "y": y.cpu()}, OUT / "fsdp_start.pt")
    return sgd_steps(model, nn.functional.cross_entropy, x, y, STEPS)


def main() -> None:
    dist.init_process_group("hccl")
    rank = dist.get_rank()
    torch.npu.set_device(rank)
    mesh = init_device_mesh("npu", (dist.get_world_size(),))
    results = {"rng": rng_round_trip(), "dtensor": dtensor_random(mesh), "fsdp2": fsdp2(mesh, rank)}
    (OUT / f"results.{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
