"""MOD:FN specs for the CLI tests: zoo models with a loss, a custom Linear whose weight
gradient is wrong (PREC_WGRAD=<factor>), and BERT whose middle norm's epsilon is
PREC_EPS when set (a wrong epsilon)."""

from __future__ import annotations

import os

import faults as F
import hf_models as H
import hf_zoo as Z
import torch
from torch import nn


class _ScaledWeightGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, factor):
        ctx.save_for_backward(x, weight)
        ctx.factor = factor
        return nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, go):
        x, weight = ctx.saved_tensors
        gw = go.reshape(-1, go.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
        return go @ weight, gw * ctx.factor, go.reshape(-1, go.shape[-1]).sum(0), None


class CustomLinear(nn.Linear):
    """A hand-written kernel: the forward is right, the weight gradient may not be."""

    factor = 1.0

    def forward(self, x):
        return _ScaledWeightGrad.apply(x, self.weight, self.bias, self.factor)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.mid = CustomLinear(32, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(torch.tanh(self.mid(torch.tanh(self.inp(x)))))


def custom_linear():
    torch.manual_seed(0)
    net = Net()
    net.mid.factor = float(os.environ.get("PREC_WGRAD", "1"))
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
    target = torch.randn(8, 4, generator=torch.Generator().manual_seed(2))
    return {"model": net, "args": (x,), "loss": lambda out: nn.functional.mse_loss(out.float(), target)}


def rwkv():
    model, args, kwargs = Z.build("rwkv")
    labels = args[0]
    return {
        "model": model,
        "args": args,
        "kwargs": {**kwargs, "labels": labels},
        "loss": lambda out: out.loss,
    }


def bert_min():
    model, args, kwargs = Z.build("bert_min")
    return model, args, kwargs


def gemma2():
    model, args, kwargs = Z.build("gemma2")
    return model, args, kwargs


def bert_eps():
    model, args, kwargs = H.build("bert")
    if os.environ.get("PREC_EPS"):
        F.wrong_eps(model, F.norm_site(model), float(os.environ["PREC_EPS"]))
    return model, args, kwargs
