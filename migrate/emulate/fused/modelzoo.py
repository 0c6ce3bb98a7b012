"""The torch_npu operators Ascend ModelZoo-PyTorch's scripts call most after the ones
emulated elsewhere (docs/emulate.md, "What NPU-native scripts use"): npu_format_cast,
npu_linear, fast_gelu, npu_bmmV2 and npu_scaled_masked_softmax, with the signatures of
torch_npu 2.14.0's op schemas and the semantics of its op documentation
(torch_npu/_op_plugin_docs.py) and meta kernels (op_plugin/meta/_meta_registrations.py)."""

from __future__ import annotations

import torch

from migrate.emulate.fused import fused_op

FAST_GELU_ALPHA = 1.702  # the FastGelu kernel: x * sigmoid(1.702 x)
MASKED_LOGIT = -10000.0  # what a masked logit becomes, as in Megatron's fused kernel


@fused_op("npu_format_cast")
def npu_format_cast(self, acl_format, *, customize_dtype=None, input_dtype=None):
    """The same values in another storage format (acl_format 29 = FRACTAL_NZ, 2 = ND, ...):
    the format changes the device layout only, never the shape or values a script sees, so
    the emulation returns a copy of self (its gradient passes through unchanged)."""
    if not isinstance(acl_format, int):
        raise TypeError(f"npu_format_cast: acl_format must be an int, got {type(acl_format).__name__}")
    return self.clone()


@fused_op("npu_linear")
def npu_linear(input, weight, bias=None):
    """input @ weight^T + bias for a 2-D input [M, K] and weight [N, K] (the documentation's
    example: a [2, 16] input and a [4, 16] weight give [2, 4])."""
    if input.dim() != 2 or weight.dim() != 2:
        raise ValueError(
            f"npu_linear: input and weight must be 2-D, got {tuple(input.shape)} and {tuple(weight.shape)}"
        )
    return torch.nn.functional.linear(input, weight, bias)


@fused_op("fast_gelu")
def fast_gelu(self):
    """x * sigmoid(1.702 x), the FastGelu approximation of gelu (the documentation's example:
    0.5991 -> 0.4403, 0.4094 -> 0.2733), with its analytic gradient."""
    return self * torch.sigmoid(FAST_GELU_ALPHA * self)


@fused_op("npu_bmmV2")
def npu_bmmV2(self, mat2, output_sizes):  # noqa: N802 - torch_npu's name
    """Batched matrix product of 2-D or higher tensors, broadcast over the batch dimensions
    as matmul does (a [10, 3, 4] and a [10, 4, 5] give [10, 3, 5]); ``output_sizes`` only
    serves the kernel's backward and does not change the result."""
    if self.dim() < 2 or mat2.dim() < 2:
        raise ValueError(
            f"npu_bmmV2: both operands must be 2-D or more, got {self.dim()}-D and {mat2.dim()}-D"
        )
    return torch.matmul(self, mat2)


@fused_op("npu_scaled_masked_softmax")
def npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax(x * scale) over the last dimension with the positions where ``mask`` (bool,
    broadcast to x) is True masked out, computed in float32 and returned in x's dtype; with
    ``fixed_triu_mask`` the mask is the generated upper triangle (causal) instead. A masked
    logit becomes -10000, as in the Megatron kernel the op follows, so a fully masked row is
    uniform, not NaN."""
    if fixed_triu_mask:
        h, w = x.shape[-2], x.shape[-1]
        mask = torch.ones(h, w, dtype=torch.bool, device=x.device).triu(1)
    if mask.dtype != torch.bool:
        raise TypeError(f"npu_scaled_masked_softmax: mask must be bool, got {mask.dtype}")
    logits = (x.float() * scale).masked_fill(mask, MASKED_LOGIT)
    return torch.softmax(logits, dim=-1).to(x.dtype)
