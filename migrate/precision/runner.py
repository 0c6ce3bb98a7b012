"""Move a ``MOD:FN`` model (loaded by migrate.core.model_spec) and its inputs to a
device/dtype, run it, and backpropagate (``--grads``).

Casts saturate: a finite fp32 value beyond the target dtype's range (an additive attention
mask filled with ``finfo(float32).min``) becomes the target's largest finite value, never
an infinity the source did not hold (``-inf`` in a softmax row turns into NaN).
"""

from __future__ import annotations

from typing import Any

from migrate.core.errors import UsageError
from migrate.core.model_spec import ModelSpec, load_model_spec

DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float64": "float64",
    "fp64": "float64",
}
# --reduced-fp32: what the target's fp32 matmuls/convolutions really ran in, when the flags
# cannot be read (emulation, another process, a device that does not expose them).
REDUCED = {
    "none": {},
    "hf32": {"matmul": "hf32", "conv": "hf32"},
    "tf32": {"matmul": "tf32", "conv": "tf32"},
    "hf32-conv": {"conv": "hf32"},
    "tf32-conv": {"conv": "tf32"},
}


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


def resolve_reduced(value: str | None) -> dict[str, str]:
    """``meta.precision`` keys declared by ``--reduced-fp32``."""
    if value is None:
        return {}
    got = REDUCED.get(value.lower())
    if got is None:
        raise UsageError(f"--reduced-fp32 must be one of {', '.join(REDUCED)}, got {value!r}")
    return dict(got) if got else {"matmul": "float32", "conv": "float32"}


def saturating_cast(t: Any, dtype: Any) -> Any:
    """``t.to(dtype)`` with finite values clamped to ``dtype``'s range first."""
    import torch

    if t.dtype == dtype or not t.is_floating_point() or not dtype.is_floating_point:
        return t.to(dtype)
    big = torch.finfo(dtype).max
    if torch.finfo(t.dtype).max > big and t.numel():
        finite = torch.isfinite(t)
        clamped = t.clamp(-big, big)
        t = torch.where(finite, clamped, t)
    return t.to(dtype)


def move(obj: Any, device: Any, dtype: Any) -> Any:
    """Move tensors (floating ones also cast to ``dtype``, saturating) inside nested
    containers."""
    import torch

    if isinstance(obj, torch.Tensor):
        if dtype is not None and obj.is_floating_point():
            return saturating_cast(obj.to(device=device), dtype)
        return obj.to(device=device)
    if isinstance(obj, dict):
        return {k: move(v, device, dtype) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(v, device, dtype) for v in obj)
    return obj


def cast_model(model: Any, dtype: Any) -> Any:
    """The model in ``dtype``: parameters by ``Module.to``, floating buffers saturating
    (a registered min-value mask stays finite)."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            for key, buf in list(module._buffers.items()):
                if buf is not None and buf.is_floating_point():
                    module._buffers[key] = saturating_cast(buf, dtype)
    return model.to(dtype=dtype)


def prepare_spec(spec: str, device: str = "cpu", dtype: str | None = None) -> ModelSpec:
    """The ``MOD:FN`` spec with its model and inputs on ``device`` in ``dtype``, eval mode;
    its ``loss`` (if any) is kept for ``--grads``."""
    got = load_model_spec(spec)
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    model = got.model.to(device=dev)
    if dt is not None:
        model = cast_model(model, dt)
    model.eval()
    return ModelSpec(
        model,
        move(got.args, dev, dt),
        move(got.kwargs, dev, dt),
        got.loss,
        got.optimizer,
        calibration_batches(got, dev, dt),
    )


def calibration_batches(got: ModelSpec, device: Any = None, dtype: Any = None) -> list[tuple[tuple, dict]]:
    """The spec's calibration batches as ``(args, kwargs)`` (its example batch if none)."""
    raw = got.calibration
    if raw is None:
        return [(move(tuple(got.args), device, dtype), move(dict(got.kwargs), device, dtype))]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise UsageError("--model: 'calibration' must be a non-empty list of batches")
    out = []
    for i, item in enumerate(raw[:10_000]):
        if isinstance(item, dict) and "args" in item:
            args, kwargs = item["args"], item.get("kwargs") or {}
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            args, kwargs = item
        else:
            args, kwargs = item, {}
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        if not isinstance(kwargs, dict):
            raise UsageError(f"--model: calibration[{i}]: kwargs must be a dict")
        out.append((move(args, device, dtype), move(kwargs, device, dtype)))
    return out


def prepare(spec: str, device: str = "cpu", dtype: str | None = None) -> tuple[Any, tuple, dict]:
    got = prepare_spec(spec, device, dtype)
    return got.model, got.args, got.kwargs


def probe_loss(output: Any) -> Any:
    """The default loss of ``--grads`` when the spec has none: every floating output
    projected on a fixed pseudo-random direction of unit norm (seeded by its shape, so both
    runs use the same). Unlike a plain sum it has a non-zero gradient through softmax and
    normalised outputs, and its gradients stay O(1/sqrt(numel)): no fp16 overflow."""
    import torch

    from migrate.precision.flatten import iter_tensors

    total = None
    for index, (_, t) in enumerate(iter_tensors(output)):
        if not (t.is_floating_point() and t.requires_grad) or not t.numel():
            continue
        gen = torch.Generator().manual_seed(1000 + index)
        direction = torch.randn(tuple(t.shape), generator=gen) / t.numel() ** 0.5
        term = (t.float() * direction.to(t.device)).sum()
        total = term if total is None else total + term
    return total


def backward_from(output: Any, loss: Any = None) -> None:
    """Backpropagate the spec's ``loss(output)``, else :func:`probe_loss` (for --grads)."""
    import torch

    value = probe_loss(output) if loss is None else loss(output)
    if loss is not None and (not isinstance(value, torch.Tensor) or value.numel() != 1):
        raise UsageError("--grads: the spec's loss must return a scalar tensor")
    if value is None or not value.requires_grad:
        raise UsageError("--grads: the model output has no tensor that requires grad")
    value.float().backward()
