"""Target numeric formats a unit is lowered to, emulated on the CPU in fp32.

A format says what happens to a unit's floating inputs, parameters and outputs:

* ``fp16`` / ``bf16``: inputs, parameters and outputs rounded to the dtype (fp32 sums, as
  Ascend's cube units do); fp16 overflows to inf as a real fp16 run does;
* ``hf32``: matmul/convolution inputs and weights rounded to a 10-bit mantissa, fp32 sums
  and outputs (Ascend's HF32, NVIDIA's TF32);
* ``int8`` / ``int4``: weights fake-quantized symmetrically (round to the grid, back to
  fp32) per tensor, per output channel or per group of ``group`` input elements; with
  ``activations`` the unit's inputs too (int8, per tensor, dynamic range).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.core.errors import UsageError

GRANULARITY = ("tensor", "channel", "group")


@dataclass(frozen=True)
class Format:
    name: str
    granularity: str = "channel"
    group: int = 128
    activations: bool = False

    @property
    def is_int(self) -> bool:
        return self.name in ("int8", "int4")

    @property
    def precision_class(self) -> str | None:
        """The thresholds.yaml class a whole model in this format is judged by."""
        return {"fp16": "float16", "bf16": "bfloat16", "hf32": "hf32"}.get(self.name)

    def label(self) -> str:
        if not self.is_int:
            return self.name
        gran = f"group{self.group}" if self.granularity == "group" else self.granularity
        return f"{self.name}-w-{gran}" + ("-a-tensor" if self.activations else "")

    # -- what lowering does ------------------------------------------------------------
    def inputs(self, t: Any) -> Any:
        if self.name in ("fp16", "bf16"):
            return _cast(t, self.name)
        if self.name == "hf32":
            return round_mantissa(t, 10)
        if self.activations:
            return fake_quant(t, 8, "tensor", self.group)
        return t

    def param(self, t: Any) -> Any:
        if self.is_int:
            if t.dim() < 2:  # biases and norm scales stay in high precision
                return t
            return fake_quant(t, 8 if self.name == "int8" else 4, self.granularity, self.group)
        if self.name == "hf32" and t.dim() < 2:
            return t
        return self.inputs(t)

    def outputs(self, t: Any) -> Any:
        return _cast(t, self.name) if self.name in ("fp16", "bf16") else t


def parse_format(
    text: str, granularity: str = "channel", group: int = 128, activations: bool = False
) -> Format:
    name = text.lower()
    if name not in ("fp16", "bf16", "hf32", "int8", "int4"):
        raise UsageError(f"--to must be fp16, bf16, hf32, int8 or int4, got {text!r}")
    if granularity not in GRANULARITY:
        raise UsageError(f"--granularity must be one of {', '.join(GRANULARITY)}, got {granularity!r}")
    if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= 65536:
        raise UsageError(f"--group-size must be an integer in [1, 65536], got {group!r}")
    return Format(name, granularity, group, activations)


def _cast(t: Any, name: str) -> Any:
    import torch

    if not t.is_floating_point() or t.dtype == torch.float64:
        return t
    dtype = torch.float16 if name == "fp16" else torch.bfloat16
    return t.to(dtype).to(t.dtype)


def round_mantissa(t: Any, bits: int) -> Any:
    """fp32 ``t`` rounded to ``bits`` mantissa bits (round to nearest, ties away)."""
    import torch

    if t.dtype != torch.float32:
        return t
    drop = 23 - bits
    i = t.contiguous().view(torch.int32)
    i = (i + (1 << (drop - 1))) & ~((1 << drop) - 1)
    return i.view(torch.float32).view(t.shape)


def fake_quant(t: Any, bits: int, granularity: str, group: int) -> Any:
    """Symmetric fake quantization of ``t`` (scale = amax / qmax per tensor, per output
    channel - dim 0 - or per group of ``group`` elements along the last dim)."""
    import torch

    if not t.is_floating_point() or not t.numel():
        return t
    qmax = 2 ** (bits - 1) - 1
    x = t.detach().float()
    if granularity == "tensor" or x.dim() < 2:
        amax = x.abs().amax()
        return _q(x, amax, qmax).to(t.dtype)
    if granularity == "channel":
        amax = x.abs().reshape(x.shape[0], -1).amax(dim=1)
        amax = amax.reshape(-1, *([1] * (x.dim() - 1)))
        return _q(x, amax, qmax).to(t.dtype)
    flat = x.reshape(-1, x.shape[-1])
    cols = flat.shape[1]
    pad = (-cols) % group
    if pad:
        flat = torch.nn.functional.pad(flat, (0, pad))
    grouped = flat.reshape(flat.shape[0], -1, group)
    amax = grouped.abs().amax(dim=-1, keepdim=True)
    out = _q(grouped, amax, qmax).reshape(flat.shape[0], -1)[:, :cols]
    return out.reshape(x.shape).to(t.dtype)


def _q(x: Any, amax: Any, qmax: int) -> Any:
    scale = (amax / qmax).clamp_min(1e-30)
    return (x / scale).round().clamp(-qmax - 1, qmax) * scale
