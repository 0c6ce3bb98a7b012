"""Datasets for train.py: CIFAR-10 from torchvision, with a synthetic fallback."""

import torch
from torch.utils.data import TensorDataset


def build_datasets(root: str):
    try:
        import torchvision
        import torchvision.transforms as T
    except ImportError:
        return _synthetic(), _synthetic(512)
    tf = T.Compose([T.ToTensor(), T.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
    train = torchvision.datasets.CIFAR10(root, train=True, download=True, transform=tf)
    val = torchvision.datasets.CIFAR10(root, train=False, download=True, transform=tf)
    return train, val


def _synthetic(n: int = 2048):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return TensorDataset(x, y)
