"""Data-parallel training launched with torchrun (see launch.sh).

Each process drives one GPU; gradients are averaged by DistributedDataParallel.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()


def setup(backend: str):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch_device = torch.npu if is_npu_available() else torch.cuda
    torch_device.set_device(local_rank)
    dist.init_process_group(backend=backend, init_method="env://")
    if dist.get_backend() in ("nccl", "hccl"):
        # NCCL reduces in place on the device; make sure every rank sees its own GPU.
        assert torch_device.current_device() == local_rank
    return local_rank, dist.get_rank(), dist.get_world_size()


def build_model(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(128, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10)
    )


def synthetic_data(n: int = 8192) -> TensorDataset:
    g = torch.Generator().manual_seed(1234)
    return TensorDataset(torch.randn(n, 128, generator=g), torch.randint(0, 10, (n,), generator=g))


def average(value: float, device) -> float:
    t = torch.tensor([value], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.item() / dist.get_world_size()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--backend",
        default="hccl" if is_npu_available() else "nccl",
        choices=["nccl", "gloo", "hccl"],
    )
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    local_rank, rank, world = setup(args.backend)
    device = torch.device(f"{'npu' if is_npu_available() else 'cuda'}:{local_rank}")
    model = build_model(args.width).to(device)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    dataset = synthetic_data()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, pin_memory=True)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        start, running = time.time(), 0.0
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        torch_device = torch.npu if is_npu_available() else torch.cuda
        torch_device.synchronize()
        mean_loss = average(running / len(loader), device)
        if rank == 0:
            print(f"epoch {epoch}: loss {mean_loss:.4f} ({time.time() - start:.1f}s, "
                  f"{world} x {torch_device.get_device_name(local_rank)})")
            torch.save(model.module.state_dict(), "model.pt")

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
