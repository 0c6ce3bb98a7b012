"""Synthetic batches, pinned and moved to the GPU."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n: int = 64, batch_size: int = 16) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    pin = torch.cuda.is_available()
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, pin_memory=pin,
                      pin_memory_device="cuda" if pin else "")


def to_gpu(batch):
    x, y = batch
    return x.cuda(non_blocking=True), y.cuda(non_blocking=True)
