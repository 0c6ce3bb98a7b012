"""Fused bias + GELU with a CUDA kernel and a PyTorch reference path."""

import torch
import torch.nn.functional as F

from fused_ops._device import get_device_type

try:
    from fused_ops import _C
except ImportError:  # extension not built
    _C = None


class FusedBiasGeLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        return _C.fused_bias_gelu(x, bias)

    @staticmethod
    def backward(ctx, grad_out):
        x, bias = ctx.saved_tensors
        with torch.enable_grad():
            x_ = x.detach().requires_grad_()
            b_ = bias.detach().requires_grad_()
            y = F.gelu(x_ + b_)
            gx, gb = torch.autograd.grad(y, (x_, b_), grad_out)
        return gx, gb


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(x + bias); the CUDA kernel when available, else plain PyTorch."""
    if _C is not None and x.device.type in ("cuda", "npu"):
        return FusedBiasGeLU.apply(x, bias)
    return F.gelu(x + bias)


class BiasGeLU(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(hidden))

    def forward(self, x):
        return bias_gelu(x, self.bias)


if __name__ == "__main__":
    m = BiasGeLU(1024).to(get_device_type())
    x = torch.randn(8, 1024, device=get_device_type())
    torch.testing.assert_close(m(x), F.gelu(x + m.bias))
    print("ok")
