"""Small real models for the precision tests; each ``*_spec`` is a MOD:FN for the CLI.

Environment knobs read by the specs (so the CLI can build a faulty target):
PREC_PERTURB=<layer>:<scale> scales that Linear's weight by (1 + scale) on four rows;
PREC_PERTURB_ONE=<layer>:<scale> scales one weight element (a small, sparse error).
PREC_NAN=1 puts a NaN into MLP layer 1's bias (one NaN column in its output).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 64, depth: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.act = nn.GELU()

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return x


class WideMLP(nn.Module):
    """Wide layers: an error on one feature stays below 1% of elements until the next
    layer mixes it into every feature and it grows past the gate downstream."""

    def __init__(self, width: int = 256) -> None:
        super().__init__()
        self.l0 = nn.Linear(width, width)
        self.l1 = nn.Linear(width, width)
        self.l2 = nn.Linear(width, width)

    def forward(self, x):
        return self.l2(torch.tanh(self.l1(torch.tanh(self.l0(x)))))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.relu(self.bn(self.conv1(x)))
        x = self.relu(self.conv2(x))
        return self.fc(self.pool(x).flatten(1))


@dataclass
class BlockOutput:
    hidden: torch.Tensor
    attn: torch.Tensor


class Block(nn.Module):
    """Pre-norm transformer block returning a dataclass; attention returns a tuple."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask=None):
        h = self.ln1(x)
        a, w = self.attn(h, h, h, attn_mask=mask, need_weights=True)
        x = x + a
        x = x + self.mlp(self.ln2(x))
        return BlockOutput(hidden=x, attn=w)


class TinyTransformer(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 2) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        weights = []
        for blk in self.blocks:
            out = blk(x, mask=mask)
            x = out.hidden
            weights.append(out.attn)
        return {"logits": self.head(x), "attn": tuple(weights)}


def _perturb(model: nn.Module) -> None:
    for var, rows in (("PREC_PERTURB", slice(0, 4)), ("PREC_PERTURB_ONE", slice(0, 1))):
        spec = os.environ.get(var)
        if not spec:
            continue
        name, _, scale = spec.partition(":")
        weight = model.get_submodule(name).weight
        with torch.no_grad():
            cols = slice(None) if var == "PREC_PERTURB" else slice(0, 1)
            weight[rows, cols] *= 1.0 + float(scale)


def mlp_spec():
    torch.manual_seed(0)
    model = MLP()
    _perturb(model)
    if os.environ.get("PREC_NAN"):
        with torch.no_grad():
            model.layers[1].bias[3] = float("nan")
    return model, (torch.randn(8, 64, generator=torch.Generator().manual_seed(1)),)


def wide_spec():
    torch.manual_seed(0)
    model = WideMLP()
    _perturb(model)
    return model, (torch.randn(8, 256, generator=torch.Generator().manual_seed(1)),)


def conv_spec():
    torch.manual_seed(0)
    model = ConvNet().eval()
    return model, (torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)


def transformer_spec():
    torch.manual_seed(0)
    model = TinyTransformer()
    _perturb(model)
    x = torch.randn(2, 10, 32, generator=torch.Generator().manual_seed(1))
    mask = torch.triu(torch.full((10, 10), float("-inf")), diagonal=1)
    return model, (x,), {"mask": mask}
