"""A compact LLaMA-style decoder block in the Hugging Face style.

Uses FlashAttention-2 when the package is installed and the GPU supports it (Ampere or
newer); otherwise falls back to PyTorch's scaled_dot_product_attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    # migrate[MIG507]: `flash_attn.flash_attn_func` needs the flash-attn CUDA package; on NPU use `torch_npu.npu_fusion_attention`: npu_fusion_attention(q, k, v, head_num ... (see `migrate rules MIG507`)
    from flash_attn import flash_attn_func, flash_attn_varlen_func

    _FLASH_ATTN_AVAILABLE = True
except ImportError:  # pragma: no cover - depends on the environment
    _FLASH_ATTN_AVAILABLE = False

# migrate[MIG503]: `apex.normalization.FusedRMSNorm` needs NVIDIA apex's CUDA kernels; use `torch.nn.RMSNorm`: torch.nn.RMSNorm defaults to eps=None (machine epsilon) where apex ... (see `migrate rules MIG503`)
from apex.normalization import FusedRMSNorm


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()


@dataclass
class LiteConfig:
    hidden_size: int = 1024
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    intermediate_size: int = 2816
    rms_norm_eps: float = 1e-6
    attention_dropout: float = 0.0
    rope_theta: float = 10000.0


def use_flash_attention() -> bool:
    if not (_FLASH_ATTN_AVAILABLE and (torch.cuda.is_available() or is_npu_available())):
        return False
    # FlashAttention-2 needs sm80 or newer.
    # migrate[MIG104]: `torch.cuda.get_device_capability` maps to `torch.npu.get_device_capability`, but it returns None unless the environment variable TORCH_NPU_DEVICE_CAPABILITY ... (see `migrate rules MIG104`)
    return torch.cuda.get_device_capability()[0] >= 8


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, positions, theta: float):
    dim = q.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=q.device).float() / dim))
    freqs = torch.outer(positions.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
    return (q * cos + rotate_half(q) * sin).to(q.dtype), (k * cos + rotate_half(k) * sin).to(k.dtype)


class LiteAttention(nn.Module):
    def __init__(self, config: LiteConfig):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.use_flash = use_flash_attention()

    def forward(self, hidden_states, positions, cu_seqlens=None, max_seqlen=None):
        bsz, seqlen, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states).view(bsz, seqlen, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.unbind(dim=2)  # (batch, seqlen, heads, head_dim)
        q, k = apply_rotary(q, k, positions, self.config.rope_theta)
        dropout = self.config.attention_dropout if self.training else 0.0
        scale = 1.0 / math.sqrt(self.head_dim)

        if self.use_flash and cu_seqlens is not None:
            # Packed sequences: (total_tokens, heads, head_dim).
            # migrate[MIG507]: `flash_attn.flash_attn_varlen_func` needs the flash-attn CUDA package; on NPU use `torch_npu.npu_fusion_attention`: use npu_fusion_attention with ... (see `migrate rules MIG507`)
            out = flash_attn_varlen_func(
                q.reshape(-1, self.num_heads, self.head_dim),
                k.reshape(-1, self.num_heads, self.head_dim),
                v.reshape(-1, self.num_heads, self.head_dim),
                cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                dropout_p=dropout, softmax_scale=scale, causal=True,
            )
            out = out.view(bsz, seqlen, -1)
        elif self.use_flash:
            # migrate[MIG507]: `flash_attn.flash_attn_func` needs the flash-attn CUDA package; on NPU use `torch_npu.npu_fusion_attention`: npu_fusion_attention(q, k, v, head_num ... (see `migrate rules MIG507`)
            out = flash_attn_func(q, k, v, dropout_p=dropout, softmax_scale=scale, causal=True)
            out = out.reshape(bsz, seqlen, -1)
        else:
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                dropout_p=dropout, is_causal=True, scale=scale,
            )
            out = out.transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.o_proj(out)


class LiteMLP(nn.Module):
    def __init__(self, config: LiteConfig):
        super().__init__()
        self.gate_up = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class LiteDecoderLayer(nn.Module):
    def __init__(self, config: LiteConfig):
        super().__init__()
        # migrate[MIG503]: `apex.normalization.FusedRMSNorm` needs NVIDIA apex's CUDA kernels; use `torch.nn.RMSNorm`: torch.nn.RMSNorm defaults to eps=None (machine epsilon) where apex ... (see `migrate rules MIG503`)
        self.input_layernorm = FusedRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = LiteAttention(config)
        # migrate[MIG503]: `apex.normalization.FusedRMSNorm` needs NVIDIA apex's CUDA kernels; use `torch.nn.RMSNorm`: torch.nn.RMSNorm defaults to eps=None (machine epsilon) where apex ... (see `migrate rules MIG503`)
        self.post_attention_layernorm = FusedRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = LiteMLP(config)

    def forward(self, hidden_states, positions, cu_seqlens=None, max_seqlen=None):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), positions,
                                       cu_seqlens, max_seqlen)
        hidden_states = residual + hidden_states
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


if __name__ == "__main__":
    cfg = LiteConfig()
    layer = LiteDecoderLayer(cfg).to("npu" if is_npu_available() else "cuda").half()
    x = torch.randn(
        2, 128, cfg.hidden_size, device="npu" if is_npu_available() else "cuda", dtype=torch.float16
    )
    print(layer(x, torch.arange(128, device="npu" if is_npu_available() else "cuda")).shape)
