"""A model whose ops need judging: an LSTM and a weight-normed convolution (composites that
torch_npu runs whole, backward included) and a ``torch.library`` op with a CPU kernel only
(a CPU fallback on the NPU). ``migrate ops --torch parity_model:build --train`` and the
emulated run of the same step must list the same fallbacks."""

from __future__ import annotations

import torch

LIB = torch.library.Library("migrate_test", "FRAGMENT")
LIB.define("scale2(Tensor x) -> Tensor")
LIB.impl("scale2", lambda x: x * 2, "CPU")
LIB.impl("scale2", lambda x: torch.empty_like(x), "Meta")


class Scale2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.ops.migrate_test.scale2(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class Parity(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 4, 3))
        self.rnn = torch.nn.LSTM(4, 4)

    def forward(self, x):
        h = Scale2.apply(self.conv(x))
        return self.rnn(h.transpose(1, 2).transpose(0, 1))[0]


def build():
    torch.manual_seed(0)
    return Parity(), (torch.randn(2, 4, 8),)
