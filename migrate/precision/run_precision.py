"""The compute precision of a run: what the dump records, and the class it is judged by.

A dump's ``meta.precision`` holds the parameter dtype, the autocast dtypes seen while it
ran, whether matmuls and convolutions ran in TF32/HF32 (10-bit mantissa inputs, fp32 sums)
on the run's device, and whether the model has convolutions. The class of a run is the
least precise of those; each tensor pair is judged by the looser of its two runs' classes
and its two dtypes, so an fp32 loss computed from bf16 logits is judged as bf16. The
classes and their order are classes.py's records.
"""

from __future__ import annotations

import sys
from typing import Any

from migrate.precision.classes import registry


def loosest(*classes: str | None) -> str | None:
    """The least precise of ``classes`` (precision classes, classes.py)."""
    return registry().loosest(*classes)


def dtype_class(dtype: str | None) -> str | None:
    return registry().of_dtype(dtype)


def _reduced_flags(device: str) -> dict[str, Any]:
    """TF32/HF32 flags of the device type, read without importing any backend."""
    import torch

    if device == "cuda":
        return {
            "matmul": "tf32"
            if (torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest")
            else "float32",
            "conv": "tf32" if torch.backends.cudnn.allow_tf32 else "float32",
        }
    if device == "npu":
        npu = getattr(torch, "npu", None) if "torch_npu" in sys.modules else None
        if npu is None:
            return {"matmul": None, "conv": None}
        mm = getattr(getattr(npu, "matmul", None), "allow_hf32", None)
        conv = getattr(getattr(npu, "conv", None), "allow_hf32", None)
        return {
            "matmul": None if mm is None else ("hf32" if mm else "float32"),
            "conv": None if conv is None else ("hf32" if conv else "float32"),
        }
    return {"matmul": "float32", "conv": "float32"}


def record(model: Any) -> dict[str, Any]:
    """``meta.precision`` for a model about to run (autocast is added while it runs)."""
    import torch

    first = next(iter(model.parameters()), None)
    device = first.device.type if first is not None else "cpu"
    has_conv = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
    return {
        "param_dtype": str(first.dtype).removeprefix("torch.") if first is not None else None,
        "device": device,
        "autocast": [],
        "has_conv": has_conv,
        **_reduced_flags(device),
        "source": "flags",
    }


def autocast_dtype(device: str) -> str | None:
    """The autocast dtype active now on ``device``, or None."""
    import torch

    try:
        if not torch.is_autocast_enabled(device):
            return None
        return str(torch.get_autocast_dtype(device)).removeprefix("torch.")
    except (RuntimeError, TypeError, AttributeError):
        return None


def run_class(meta: dict[str, Any], profile: dict[str, Any]) -> str | None:
    """The class a run is judged by; ``profile`` says how TF32/HF32 and unknown flags count
    (thresholds.yaml ``profiles``)."""
    prec = meta.get("precision")
    if not isinstance(prec, dict):
        return dtype_class(meta.get("dtype"))
    found = [dtype_class(prec.get("param_dtype"))]
    found += [dtype_class(d) for d in prec.get("autocast") or []]
    if profile.get("reduced_fp32", "honor") == "honor":
        device = prec.get("device")
        unknown = profile.get("unknown_flags", {}).get(device, {})
        mm = prec.get("matmul") or unknown.get("matmul")
        conv = prec.get("conv") or unknown.get("conv")
        if mm in ("tf32", "hf32") or (prec.get("has_conv", True) and conv in ("tf32", "hf32")):
            found.append("hf32")
    return loosest(*found)
