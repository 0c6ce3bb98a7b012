"""MOD:FN factories used by the ATen capture tests (real PyTorch models)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812


class SupportedOnly(nn.Module):
    """Linear, LayerNorm, SDPA, matmul, a transpose and GELU: all run on the NPU."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.norm = nn.LayerNorm(16)
        self.lstm = nn.LSTM(16, 16, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]
        s = torch.matmul(a, h.transpose(1, 2)) @ h
        out, _ = self.lstm(s)
        d = torch.cdist(out, a)  # CompositeImplicitAutograd with an NPU kernel
        return F.gelu(out + a).sum(-1).t() + F.softmax(d, dim=-1).sum()


class Special(nn.Module):
    """Ops with no NPU kernel in torch_npu 2.14.0: i1, eigh, lgamma."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        w = torch.linalg.eigh(y @ y.mT)[0]
        return torch.special.i1(y).sum() + torch.lgamma(y.abs() + 1).sum() + w.sum()


def supported():
    torch.manual_seed(0)
    return SupportedOnly().eval(), (torch.randn(2, 5, 16),)


def special():
    torch.manual_seed(0)
    return Special().eval(), (torch.randn(4, 4),), {}


def raises():
    raise RuntimeError("factory failed on purpose")


def not_a_tuple():
    return nn.Linear(2, 2)


def model_fails():
    return nn.Linear(2, 2), (torch.randn(3, 5),)
