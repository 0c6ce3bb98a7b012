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
import torch_npu

try:
    _FLASH_ATTN_AVAILABLE = True
except ImportError:  # pragma: no cover - depends on the environment
    _FLASH_ATTN_AVAILABLE = False


class NpuRMSNorm(torch.nn.Module):
    """apex FusedRMSNorm on Ascend via torch_npu.npu_rms_norm (written by migrate).

    Same constructor and parameter name (`weight`) as apex, so checkpoints load as before.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 memory_efficient=False):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        weight = self.weight
        if weight is None:
            weight = torch.ones(self.normalized_shape, dtype=x.dtype, device=x.device)
        return torch_npu.npu_rms_norm(x, weight, epsilon=self.eps)[0]


def npu_flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                        deterministic=False):
    """flash_attn_func on Ascend via torch_npu.npu_fusion_attention (written by migrate).

    q, k, v: (batch, seqlen, nheads, headdim), layout "BSND". A causal mask is aligned to
    the bottom-right corner (sparse_mode=3), as in flash_attn >= 2.1. `deterministic` is
    accepted for compatibility; the NPU kernel chooses its own backward algorithm.
    """
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    atten_mask, sparse_mode = None, 0
    if causal:
        atten_mask = torch.triu(torch.ones(2048, 2048, device=q.device), diagonal=1).bool()
        sparse_mode = 3
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[2], "BSND",
        atten_mask=atten_mask, scale=softmax_scale, keep_prob=1.0 - dropout_p,
        sparse_mode=sparse_mode,
    )[0]


def npu_flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                               max_seqlen_k=None, dropout_p=0.0, softmax_scale=None,
                               causal=False, deterministic=False):
    """flash_attn_varlen_func on Ascend via torch_npu.npu_fusion_attention (written by migrate).

    q, k, v: (total_tokens, nheads, headdim), layout "TND". The kernel takes the cumulative
    sequence lengths without the leading 0, as host lists. max_seqlen_* are not needed.
    """
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    atten_mask, sparse_mode = None, 0
    if causal:
        atten_mask = torch.triu(torch.ones(2048, 2048, device=q.device), diagonal=1).bool()
        sparse_mode = 3
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[1], "TND",
        atten_mask=atten_mask, scale=softmax_scale, keep_prob=1.0 - dropout_p,
        actual_seq_qlen=cu_seqlens_q[1:].tolist(), actual_seq_kvlen=cu_seqlens_k[1:].tolist(),
        sparse_mode=sparse_mode,
    )[0]


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
    if not (_FLASH_ATTN_AVAILABLE and torch.npu.is_available()):
        return False
    # FlashAttention-2 needs sm80 or newer.
    return torch.npu.is_bf16_supported()


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
            out = npu_flash_attn_varlen_func(
                q.reshape(-1, self.num_heads, self.head_dim),
                k.reshape(-1, self.num_heads, self.head_dim),
                v.reshape(-1, self.num_heads, self.head_dim),
                cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                dropout_p=dropout, softmax_scale=scale, causal=True,
            )
            out = out.view(bsz, seqlen, -1)
        elif self.use_flash:
            out = npu_flash_attn_func(q, k, v, dropout_p=dropout, softmax_scale=scale, causal=True)
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
        self.input_layernorm = NpuRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = LiteAttention(config)
        self.post_attention_layernorm = NpuRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = LiteMLP(config)

    def forward(self, hidden_states, positions, cu_seqlens=None, max_seqlen=None):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), positions,
                                       cu_seqlens, max_seqlen)
        hidden_states = residual + hidden_states
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


if __name__ == "__main__":
    cfg = LiteConfig()
    layer = LiteDecoderLayer(cfg).npu().half()
    x = torch.randn(2, 128, cfg.hidden_size, device="npu", dtype=torch.float16)
    print(layer(x, torch.arange(128, device="npu")).shape)
