"""The one ``MOD:FN`` loader (``migrate ops --torch``, ``migrate dump/replay --model``).

``MOD`` is a dotted module importable from the current directory (``mypkg.models``) or a file
path (``path/to/file.py``); ``FN`` names a factory that takes no arguments and returns

* ``(model, args)`` or ``(model, args, kwargs)``: the model and one batch of example inputs
  (``args`` may be a single tensor), or
* a dict with ``model`` and ``args`` and optionally ``kwargs``, ``loss`` (a callable taking the
  model's output and returning a scalar tensor, used by ``--train``) and ``optimizer`` (a
  ``torch.optim.Optimizer`` over the model's parameters) and ``calibration`` (a list of input
  batches for ``migrate sensitivity``, each ``args`` or ``(args, kwargs)``).

Every bad form is one ``UsageError`` line naming the flag (exit 2),
never a traceback: the user's import or factory may raise anything (even ``SystemExit``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError

SPEC_KEYS = ("model", "args", "kwargs", "loss", "optimizer", "calibration")


@dataclass
class ModelSpec:
    model: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    loss: Any = None  # callable(output) -> scalar tensor, or None
    optimizer: Any = None  # a torch.optim.Optimizer, or None
    calibration: Any = None  # batches for `migrate sensitivity`: a list of args or (args, kwargs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _is_path(mod: str) -> bool:
    return mod.endswith(".py") or os.sep in mod or (os.altsep is not None and os.altsep in mod)


def _import_file(mod: str, option: str):
    path = Path(mod)
    if not path.is_file():
        raise UsageError(f"{option} {mod}: no such file")
    name = f"_migrate_spec_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{option} {mod}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file's sibling modules import as in `python file.py`
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_module(mod: str, option: str = "--model"):
    """The module named by ``mod`` (dotted name or file path); errors are UsageErrors."""
    try:
        if _is_path(mod):
            return _import_file(mod, option)
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(mod)
    except UsageError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        raise UsageError(f"{option}: cannot import {mod} ({_first_line(exc)})") from None


def _split(spec: str, option: str) -> tuple[str, str]:
    mod, sep, fn = spec.rpartition(":")
    if not sep or not mod or not fn or not fn.isidentifier():
        raise UsageError(
            f"{option} {spec!r}: expected MODULE:FUNCTION or "
            "path/to/file.py:FUNCTION (e.g. mypkg.models:make)"
        )
    return mod, fn


def _from_dict(made: dict, spec: str, fn: str, option: str) -> ModelSpec:
    unknown = sorted(set(made) - set(SPEC_KEYS))
    if unknown or "model" not in made or "args" not in made:
        raise UsageError(
            f"{option} {spec}: {fn}() returned a dict; it needs 'model' and 'args' "
            f"and may have {', '.join(SPEC_KEYS[2:])}"
            + (f" (unknown: {', '.join(map(str, unknown))})" if unknown else "")
        )
    if made.get("loss") is not None and not callable(made["loss"]):
        raise UsageError(f"{option} {spec}: 'loss' must be a callable taking the model output")
    return ModelSpec(
        made["model"],
        made["args"],
        made.get("kwargs") or {},
        made.get("loss"),
        made.get("optimizer"),
        made.get("calibration"),
    )


def _normalise(made, spec: str, fn: str, option: str) -> ModelSpec:
    if isinstance(made, dict):
        out = _from_dict(made, spec, fn, option)
    elif isinstance(made, tuple) and len(made) in (2, 3):
        out = ModelSpec(made[0], made[1], made[2] if len(made) == 3 else {})
    else:
        raise UsageError(
            f"{option} {spec}: {fn}() must return (model, args), "
            f"(model, args, kwargs) or a dict, not {type(made).__name__}"
        )
    if not isinstance(out.kwargs, dict):
        raise UsageError(f"{option} {spec}: kwargs must be a dict, not {type(out.kwargs).__name__}")
    if not callable(out.model):
        raise UsageError(f"{option} {spec}: the model ({type(out.model).__name__}) is not callable")
    out.args = tuple(out.args) if isinstance(out.args, (tuple, list)) else (out.args,)
    out.kwargs = dict(out.kwargs)
    return out


def spec_files(spec: str) -> list[Path]:
    """The source file ``MOD`` of ``MOD:FN`` names, found without running it (an output
    must not overwrite it); [] when it cannot be told."""
    import importlib.machinery

    mod = spec.rpartition(":")[0]
    if not mod:
        return []
    if _is_path(mod):
        return [Path(mod)]
    locations = [os.getcwd(), *sys.path]
    found = None
    for part in mod.split("."):
        try:
            found = importlib.machinery.PathFinder.find_spec(part, locations)
        except (ImportError, ValueError, OSError):
            return []
        if found is None:
            return []
        locations = list(found.submodule_search_locations or [])
    origin = getattr(found, "origin", None)
    return [Path(origin)] if origin and os.path.isfile(origin) else []


def load_model_spec(spec: str, option: str = "--model") -> ModelSpec:
    """Import ``MOD``, call ``FN()`` and check what it returned; ``option`` names the flag in
    messages (``--torch``, ``--model``)."""
    mod, fn = _split(spec, option)
    module = import_module(mod, option)
    factory = getattr(module, fn, None)
    if not callable(factory):
        raise UsageError(f"{option} {spec}: {mod} has no callable {fn!r}")
    try:
        made = factory()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's factory may raise anything
        raise UsageError(f"{option} {spec}: {fn}() raised {_first_line(exc)}") from None
    return _normalise(made, spec, fn, option)


def load_spec(spec: str, option: str = "--model") -> tuple[Any, tuple, dict]:
    """``(model, args, kwargs)`` of ``MOD:FN``: the drop-in for callers that need no loss."""
    got = load_model_spec(spec, option)
    return got.model, got.args, got.kwargs
