"""MOD:FN specs for the sensitivity tests: an MLP with one outlier channel, and GPT-2 with a
calibration set."""

from __future__ import annotations

import hf_models as H
import torch
from torch import nn


class Deep(nn.Module):
    def __init__(self, width: int = 64, depth: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return self.head(x)


def outlier_mlp():
    """layers.3 has one output channel 60x the others (weights and bias): its per-tensor
    int8 grid is too coarse for every other channel."""
    torch.manual_seed(0)
    model = Deep().eval()
    with torch.no_grad():
        model.layers[3].weight[5] *= 60.0
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(16, 64, generator=gen),) for _ in range(4)]
    return {"model": model, "args": batches[0], "calibration": batches}


def gpt2():
    model, args, kwargs = H.build("gpt2")
    gen = torch.Generator().manual_seed(5)
    batches = [((torch.randint(0, 256, (2, 12), generator=gen),), {"use_cache": False}) for _ in range(4)]
    return {"model": model, "args": args, "kwargs": kwargs, "calibration": batches}


class Chain(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.l0, self.l1 = nn.Linear(width, width), nn.Linear(width, width)
        self.l2, self.head = nn.Linear(width, width), nn.Linear(width, 10)

    def forward(self, x):
        return self.head(torch.tanh(self.l2(torch.relu(self.l1(torch.tanh(self.l0(x)))))))


def overflow_mlp():
    """l1 computes values beyond fp16's range (x1e5) that l2 scales back: fine in fp32,
    inf in fp16 unless both stay in fp32."""
    torch.manual_seed(0)
    model = Chain().eval()
    with torch.no_grad():
        model.l1.weight *= 1e5
        model.l1.bias *= 1e5
        model.l2.weight /= 1e5
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(16, 64, generator=gen),) for _ in range(4)]
    return {"model": model, "args": batches[0], "calibration": batches}


class NormMLP(nn.Module):
    """A pre-norm MLP block: layer_norm, linear (exported as MatMul + Add on 3-D inputs),
    gelu and the residual add, each a torch function of its own."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.head = nn.Linear(width, 8)

    def forward(self, x):
        x = x + self.down(nn.functional.gelu(self.up(self.norm(x))))
        return self.head(x)


def norm_mlp():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(2, 6, 32, generator=gen),) for _ in range(2)]
    return {"model": NormMLP().eval(), "args": batches[0], "calibration": batches}


def llama(use_cache: bool = True):
    """HF Llama (tiny): with ``use_cache`` the forward returns a DynamicCache, which neither
    ONNX exporter takes; without, the TorchScript exporter stops at ``aten::diff``."""
    model, args, _ = H.build("llama")
    gen = torch.Generator().manual_seed(5)
    kw = {"use_cache": use_cache}
    batches = [((torch.randint(0, 256, (2, 12), generator=gen),), kw) for _ in range(2)]
    return {"model": model, "args": args, "kwargs": kw, "calibration": batches}


def llama_no_cache():
    return llama(use_cache=False)
