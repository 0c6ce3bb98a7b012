"""torch_npu.npu_rms_norm, npu_rotary_mul, npu_swiglu, npu_confusion_transpose: the formulas
of the op documentation (torch_npu/_op_plugin_docs.py in the wheel)."""

from __future__ import annotations

import torch

from migrate.emulate.fused import fused_op


@fused_op("npu_rms_norm")
def npu_rms_norm(x, gamma, epsilon=1e-6):
    """(y, rstd): y = x * rsqrt(mean(x^2 over gamma's dims) + eps) * gamma, in float32."""
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


@fused_op("npu_rotary_mul")
def npu_rotary_mul(x, r1, r2, rotary_mode="half", rotate=None):
    """output = r1 * x + r2 * rotate_half(x) ('half'), the interleaved pairing
    ('interleave'), or x @ rotate when a rotate matrix is given."""
    if rotate is not None:
        turned = torch.matmul(x, rotate)
    elif rotary_mode == "half":
        x1, x2 = torch.chunk(x, 2, dim=-1)
        turned = torch.cat((-x2, x1), dim=-1)
    elif rotary_mode == "interleave":
        x1, x2 = x[..., ::2], x[..., 1::2]
        turned = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}")
    return r1 * x + r2 * turned


@fused_op("npu_swiglu")
def npu_swiglu(x, dim=-1):
    """swish(A) * B with A, B = the two halves of x along dim."""
    a, b = torch.chunk(x, 2, dim=dim)
    return torch.nn.functional.silu(a) * b


@fused_op("npu_confusion_transpose")
def npu_confusion_transpose(x, perm, shape, transpose_first):
    """permute then reshape (transpose_first) or reshape then permute."""
    if transpose_first:
        return x.permute(*perm).reshape(*shape)
    return x.reshape(*shape).permute(*perm)
