"""Synthetic batches, pinned and moved to the GPU."""

import torch
from torch.utils.data import DataLoader, TensorDataset

from trainkit.accel import get_device_name, get_torch_device


def make_loader(n: int = 64, batch_size: int = 16) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    pin = get_torch_device().is_available()
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, pin_memory=pin,
                      pin_memory_device=get_device_name() if pin else "")


def to_gpu(batch):
    x, y = batch
    return x.to(get_device_name(), non_blocking=True), y.to(
        get_device_name(), non_blocking=True
    )
