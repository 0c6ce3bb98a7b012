"""Resolve `MOD:FN` (an importable callable returning (model, args[, kwargs])) and move it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from migrate.core.errors import UsageError

_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _import(mod: str):
    if mod.endswith(".py") or os.sep in mod:
        path = Path(mod)
        if not path.is_file():
            raise UsageError(f"--torch {mod}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(mod)


def load_spec(spec: str):
    """(model, args, kwargs) from ``MOD:FN``; any failure is one clear UsageError."""
    mod, sep, fn = spec.rpartition(":")
    if not sep or not mod or not fn:
        raise UsageError(f"--torch {spec!r}: expected MOD:FN (e.g. mypkg.models:make)")
    try:
        module = _import(mod)
    except UsageError:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        raise UsageError(f"--torch {spec}: cannot import {mod} "
                         f"({type(exc).__name__}: {exc})") from None
    factory = getattr(module, fn, None)
    if not callable(factory):
        raise UsageError(f"--torch {spec}: {mod} has no callable {fn!r}")
    try:
        made = factory()
    except BaseException as exc:  # noqa: BLE001
        raise UsageError(f"--torch {spec}: {fn}() raised {type(exc).__name__}: {exc}") from None
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise UsageError(f"--torch {spec}: {fn}() must return (model, args) or "
                         "(model, args, kwargs)")
    model, args = made[0], made[1]
    kwargs = made[2] if len(made) == 3 else {}
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    return model, args, dict(kwargs or {})


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
        if hasattr(model, "to"):
            model = model.to(dev)
            if tdtype is not None:
                model = model.to(tdtype)
    except (RuntimeError, AssertionError) as exc:
        raise UsageError(f"cannot move the model to {device}: {exc}") from None
    return model, conv(args), conv(kwargs)
