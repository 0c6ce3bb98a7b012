"""Test input, not torchvision: the two names pytorch_warmup's EMNIST example reads
(datasets.EMNIST, transforms.Compose/ToTensor/Normalize), serving synthetic 28x28 digits
so the unmodified example trains offline. (torchvision does not import beside this torch.)"""

import types

import torch
from torch.utils.data import Dataset


class EMNIST(Dataset):
    def __init__(self, root, split="balanced", train=True, download=False, transform=None):
        g = torch.Generator().manual_seed(0 if train else 1)
        n = 128 if train else 64
        self.images = torch.rand(n, 1, 28, 28, generator=g)
        self.labels = torch.randint(0, 47, (n,), generator=g)
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i]
        return (self.transform(x) if self.transform else x), int(self.labels[i])


class Compose:
    def __init__(self, steps):
        self.steps = steps

    def __call__(self, x):
        for step in self.steps:
            x = step(x)
        return x


class ToTensor:
    def __call__(self, x):
        return x


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

    def __call__(self, x):
        return (x - self.mean) / self.std


datasets = types.SimpleNamespace(EMNIST=EMNIST)
transforms = types.SimpleNamespace(Compose=Compose, ToTensor=ToTensor, Normalize=Normalize)
