"""A model whose ops without NPU kernels are dispatched inside an installed library (the
library file is written under a ``site-packages`` folder by :func:`install`), and the
training step that runs it: their locations must be the model's lines that call the
library, and their backward ops' the forward lines that made them."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

LIBRARY = "import torch\n\n\ndef bessel(x):\n    return torch.special.i1(x)  # inside the library\n"


def install(root: Path) -> Path:
    """Write the library (fakelib) under ``root``/site-packages and put it on sys.path."""
    path = root / "site-packages" / "fakelib" / "__init__.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LIBRARY)
    sys.path.insert(0, str(path.parents[1]))
    return path


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        import fakelib

        h = self.lin(x)
        g = fakelib.bessel(h)  # LIBRARY CALL
        return torch.special.i0e(g).sum()  # DIRECT CALL


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def build():
    torch.manual_seed(0)
    return Model(), (torch.randn(3, 4),)


def step(device: str) -> float:
    model, (x,) = build()
    model = model.to(device)
    loss = model(x.to(device))
    loss.backward()
    return loss.item()
