"""A real transformers Llama (tiny config, random init) ported to torch_npu fused ops the
way NPU ports do it - rotary embedding by ``npu_rotary_mul``, RMSNorm by ``npu_rms_norm``,
the gated MLP by ``npu_swiglu`` - calling the emulator's reference implementations, and the
faults a fused kernel or its call can bring (a wrong rotary layout)."""

from __future__ import annotations

import types
from contextlib import contextmanager

import torch

from migrate.emulate.fused import FUSED

# Module globals, as after ``from torch_npu import ...``: what a port's code calls.
npu_rotary_mul = FUSED["npu_rotary_mul"]
npu_rms_norm = FUSED["npu_rms_norm"]
npu_swiglu = FUSED["npu_swiglu"]


def _rope(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return npu_rotary_mul(q, cos, sin), npu_rotary_mul(k, cos, sin)


def _rms(self, x):
    return npu_rms_norm(x, self.weight, epsilon=self.variance_epsilon)[0]


def _mlp(self, x):
    return self.down_proj(npu_swiglu(torch.cat([self.gate_proj(x), self.up_proj(x)], -1)))


def build_ported(dtype=torch.float32, layers: int = 2):
    """``(model, args, kwargs)``: its norms and MLPs call the fused ops (module globals of
    this file); the rotary embedding does within :func:`fused_rope`."""
    import transformers as tf

    torch.manual_seed(0)
    cfg = tf.LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=256,
    )
    model = tf.LlamaForCausalLM(cfg).eval().to(dtype)
    for module in model.modules():
        name = type(module).__name__
        if name == "LlamaRMSNorm":
            module.forward = types.MethodType(_rms, module)
        elif name == "LlamaMLP":
            module.forward = types.MethodType(_mlp, module)
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
    return model, (ids,), {"use_cache": False}


@contextmanager
def fused_rope():
    """transformers' Llama calls :func:`_rope` (npu_rotary_mul) within the block."""
    from transformers.models.llama import modeling_llama

    before = modeling_llama.apply_rotary_pos_emb
    modeling_llama.apply_rotary_pos_emb = _rope
    try:
        yield
    finally:
        modeling_llama.apply_rotary_pos_emb = before


def wrong_layout(only_call: int | None = None, per_forward: int = 4):
    """A fused rotary kernel that pairs dimensions the interleaved way while the caller's
    cos/sin are laid out in halves (rotate_half): every call, or only call ``only_call`` of
    the ``per_forward`` calls of each forward."""
    ref = FUSED["npu_rotary_mul"].reference
    seen = [0]

    def kernel(x, r1, r2, rotary_mode="half", rotate=None):
        nth = seen[0] % per_forward
        seen[0] += 1
        if only_call is None or nth == only_call:
            return ref(x, r1, r2, rotary_mode="interleave")
        return ref(x, r1, r2, rotary_mode=rotary_mode, rotate=rotate)

    return kernel


def bf16_rms_norm(x, gamma, epsilon=1e-6):
    """An honest kernel that, unlike the reference, stays in the input's dtype: it differs
    from the composition by that dtype's rounding only."""
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + epsilon)
    return x * rstd * gamma, rstd


npu_fusion_attention = FUSED["npu_fusion_attention"]


class TwoSiteBlock(torch.nn.Module):
    """q and k rotated at two call sites, attention by ``npu_fusion_attention`` in BSND."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q = npu_rotary_mul(q, cos, sin)
        k = npu_rotary_mul(k, cos, sin)
        att = npu_fusion_attention(q, k, v, self.heads, "BSND", scale=(d // self.heads) ** -0.5)[0]
        return x + att.reshape(b, s, d)


def build_two_site(layers: int = 2):
    """``(model, args, kwargs)``: ``layers`` blocks, each with two rotary call sites."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(TwoSiteBlock() for _ in range(layers))).eval()
    pos = torch.arange(6).float()[:, None] / 10000 ** (torch.arange(0, 8, 2) / 8)
    ang = torch.cat([pos, pos], -1)[None, :, None, :]
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(1))

    class Run(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = model

        def forward(self, x):
            for block in self.blocks:
                x = block(x, ang.cos(), ang.sin())
            return x

    return Run().eval(), (x,), {}


def bnsd_attention(*args, **kwargs):
    """A kernel that returns BNSD when asked for BSND: the documented layout's axes 1 and 2
    swapped, values otherwise right."""
    out = FUSED["npu_fusion_attention"].reference(*args, **kwargs)
    return (out[0].transpose(1, 2).contiguous(), *out[1:])
