"""Run a model once for the capture: an eval forward (no_grad) or a training step
(forward, loss, backward, optimizer step), with clear errors for models that cannot be run."""

from __future__ import annotations

import inspect

from migrate.core.errors import UsageError

_DTYPES = ("float32", "float16", "bfloat16", "float64")


def check_runnable(model, option: str) -> None:
    """Refuse what the capture cannot hook, with the reason and what to pass instead."""
    import torch

    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        raise UsageError(
            f"{option}: the factory returned a TorchScript "
            f"{type(model).__name__}; its ops run inside the TorchScript "
            "interpreter where module hooks cannot see them: return the eager "
            "nn.Module (before torch.jit.script/trace)"
        )


def move(model, args, kwargs, device: str = "cpu", dtype: str | None = None):
    """Model and inputs on ``device``; floating tensors cast to ``dtype``."""
    import torch

    if dtype is not None and dtype not in _DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(_DTYPES)}")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise UsageError(f"--device {device!r}: {exc}") from None
    tdtype = getattr(torch, dtype) if dtype else None

    def conv(x):
        if isinstance(x, torch.Tensor):
            x = x.to(dev)
            return x.to(tdtype) if tdtype is not None and x.is_floating_point() else x
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        return x

    try:
        if isinstance(model, torch.nn.Module):
            model = model.to(dev)
            if tdtype is not None:
                model = model.to(tdtype)
    except (RuntimeError, AssertionError) as exc:
        raise UsageError(f"cannot move the model to {device}: {exc}") from None
    return model, conv(args), conv(kwargs)


def _tensors(obj, depth: int = 0):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 6 and isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, depth + 1)
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v, depth + 1)


def default_loss(output):
    """``output.loss`` (transformers with labels) or the mean of every floating output that
    requires grad, summed."""
    import torch

    loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss if loss.dim() == 0 else loss.float().mean()
    parts = [t.float().mean() for t in _tensors(output) if t.is_floating_point() and t.requires_grad]
    if not parts:
        raise UsageError(
            "--train: the model output has no floating tensor that requires "
            "grad; return a dict with a 'loss' callable from the factory"
        )
    return sum(parts[1:], parts[0])


def default_optimizer(model):
    """AdamW over the trainable parameters (the for-loop implementation), or None."""
    import torch

    params = [p for p in getattr(model, "parameters", list)() if p.requires_grad]
    return torch.optim.AdamW(params, lr=1e-4, foreach=False) if params else None


def forward(model, args, kwargs, option: str):
    """``model(*args, **kwargs)``; whatever the model raises becomes a UsageError."""
    try:
        out = model(*args, **kwargs)
    except UsageError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's model failed (even SystemExit)
        text = str(exc).strip()
        raise UsageError(
            f"{option}: the model raised {type(exc).__name__}{': ' + text.splitlines()[0] if text else ''}"
        ) from None
    if inspect.isgenerator(out) or inspect.isasyncgen(out) or inspect.iscoroutine(out):
        if hasattr(out, "close"):
            out.close()
        raise UsageError(
            f"{option}: the model's forward returned a {type(out).__name__}, "
            "so it ran no ops; make forward return its outputs"
        )
    return out
