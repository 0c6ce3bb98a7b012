"""MOD:FN specs whose code calls torch_npu fused ops, as a port writes it (``import
torch_npu``; on the CPU the emulator's, under ``migrate bisect``). PREC_ROPE_BUG=1 makes the
rotary kernel pair dimensions the interleaved way (a kernel that does not compute what its
documentation says)."""

from __future__ import annotations

import os

import torch
import torch_npu
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm = nn.Parameter(torch.ones(d))
        self.qkv = nn.Linear(d, 3 * d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(2 * d, d)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        h = torch_npu.npu_rms_norm(x, self.norm, epsilon=1e-6)[0]
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q = torch_npu.npu_rotary_mul(q, cos, sin)
        k = torch_npu.npu_rotary_mul(k, cos, sin)
        att = torch_npu.npu_fusion_attention(
            q, k, v, self.heads, "BSND", scale=(d // self.heads) ** -0.5, sparse_mode=0
        )[0]
        x = x + att.reshape(b, s, d)
        return x + self.down(torch_npu.npu_swiglu(self.up(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(2))

    def forward(self, x, cos, sin):
        for block in self.blocks:
            x = block(x, cos, sin)
        return x


def _rope_tables(s: int = 6, dim: int = 8):
    pos = torch.arange(s).float()[:, None] / 10000 ** (torch.arange(0, dim, 2) / dim)
    ang = torch.cat([pos, pos], -1)[None, :, None, :]  # (1, S, 1, D): half layout
    return ang.cos(), ang.sin()


def ported():
    if os.environ.get("PREC_ROPE_BUG"):
        reference = torch_npu.npu_rotary_mul.reference

        def kernel(x, r1, r2, rotary_mode="half", rotate=None):
            return reference(x, r1, r2, rotary_mode="interleave")

        torch_npu.npu_rotary_mul = kernel
    torch.manual_seed(0)
    cos, sin = _rope_tables()
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(1))
    return Net().eval(), (x, cos, sin)


def plain():
    torch.manual_seed(0)
    return nn.Linear(4, 4), (torch.randn(2, 4),)
