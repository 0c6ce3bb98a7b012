"""Move a ``MOD:FN`` model (loaded by migrate.core.model_spec) and its inputs to a
device/dtype, run it."""

from __future__ import annotations

from typing import Any

from migrate.core.errors import UsageError
from migrate.core.model_spec import load_spec

DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float64": "float64", "fp64": "float64"}


def resolve_device(device: str) -> Any:
    import torch

    if device == "npu":
        try:
            import torch_npu  # noqa: F401  (registers the npu device)
        except ImportError:
            raise UsageError("--device npu needs torch_npu installed") from None
    elif device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: CUDA is not available")
    elif device not in ("cpu", "cuda", "npu"):
        raise UsageError(f"--device must be cpu, cuda or npu, got {device!r}")
    return torch.device(device)


def resolve_dtype(dtype: str | None) -> Any:
    if dtype is None:
        return None
    import torch

    name = DTYPES.get(dtype.lower())
    if name is None:
        raise UsageError(f"--dtype must be one of {', '.join(sorted(DTYPES))}, got {dtype!r}")
    return getattr(torch, name)


def move(obj: Any, device: Any, dtype: Any) -> Any:
    """Move tensors (floating ones also cast to ``dtype``) inside nested containers."""
    import torch

    if isinstance(obj, torch.Tensor):
        if dtype is not None and obj.is_floating_point():
            return obj.to(device=device, dtype=dtype)
        return obj.to(device=device)
    if isinstance(obj, dict):
        return {k: move(v, device, dtype) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(v, device, dtype) for v in obj)
    return obj


def prepare(spec: str, device: str = "cpu", dtype: str | None = None) -> tuple[Any, tuple, dict]:
    model, args, kwargs = load_spec(spec)
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    model = model.to(device=dev)
    if dt is not None:
        model = model.to(dtype=dt)
    model.eval()
    return model, move(args, dev, dt), move(kwargs, dev, dt)


def backward_from(output: Any) -> None:
    """Backpropagate the sum of every floating output tensor (for --grads)."""
    from migrate.precision.flatten import iter_tensors

    total = None
    for _, t in iter_tensors(output):
        if t.is_floating_point() and t.requires_grad:
            s = t.float().sum()
            total = s if total is None else total + s
    if total is None:
        raise UsageError("--grads: the model output has no tensor that requires grad")
    total.backward()
