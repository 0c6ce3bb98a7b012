"""``autocast_exclude.py``: the kept units run outside autocast, in float32, in eager code.

* module and type units: ``KEEP_FP32`` (module paths); ``exclude_from_autocast(model)``
  wraps each module's ``forward``. Each wrapper is made by a function of its own, so it
  reads its own module's device (a wrapper defined in the loop would read the last
  module's), and casts floating tensors in positional and keyword arguments (nested in
  lists, tuples and dicts) to float32;
* op units: ``KEEP_FP32_OPS`` (torch function names, as ``migrate sensitivity`` names them:
  ``linear``, ``layer_norm``); ``fp32_ops()`` is a TorchFunctionMode that runs every call
  of those functions outside autocast on float32 arguments, and
  ``exclude_from_autocast(model)`` makes ``model.forward`` run inside it.

The model spec's name goes into the file as a JSON string constant, never into its code.
"""

from __future__ import annotations

import json
import re

_CAST = '''

def _fp32(value):
    """Floating tensors (also inside lists, tuples and dicts) as float32."""
    if torch.is_tensor(value):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_fp32(v) for v in value)
    if isinstance(value, dict):
        return {k: _fp32(v) for k, v in value.items()}
    return value


def _device(tensors, default="cpu"):
    for value in tensors:
        if torch.is_tensor(value):
            return value.device.type
    return default
'''

_MODULES = (
    '''"""Modules measured as sensitive to {fmt} by `migrate sensitivity`: run them outside
autocast, in float32. Usage: exclude_from_autocast(model) once, after building it."""

import torch

MEASURED_ON = {model}
KEEP_FP32 = {names}
'''
    + _CAST
    + '''

def _outside_autocast(module, forward):
    """``forward`` of ``module`` outside autocast on float32 arguments (bound per module)."""

    def wrapped(*args, **kwargs):
        device = _device(module.parameters(), _device([*args, *kwargs.values()]))
        with torch.autocast(device_type=device, enabled=False):
            return forward(*_fp32(args), **_fp32(kwargs))

    return wrapped


def exclude_from_autocast(model, names=KEEP_FP32):
    for name in names:
        module = model.get_submodule(name)
        module.forward = _outside_autocast(module, module.forward)
    return model
'''
)

_OPS = (
    '''"""Torch ops measured as sensitive to {fmt} by `migrate sensitivity` (op units: every
call of these functions, wherever the model makes it): run them outside autocast, in
float32. Usage: exclude_from_autocast(model) once, after building it (model.forward then
runs inside fp32_ops()), or `with fp32_ops():` around any code."""

import torch

MEASURED_ON = {model}
KEEP_FP32_OPS = {names}
'''
    + _CAST
    + '''

def _name(func):
    return getattr(func, "__name__", None) or type(func).__name__


class fp32_ops(torch.overrides.TorchFunctionMode):
    """Every call of a function named in ``names`` outside autocast, on float32 arguments."""

    def __init__(self, names=KEEP_FP32_OPS):
        super().__init__()
        self.names = frozenset(names)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _name(func) not in self.names:
            return func(*args, **kwargs)
        device = _device([*args, *kwargs.values()])
        with torch.autocast(device_type=device, enabled=False):
            return func(*_fp32(args), **_fp32(kwargs))


def exclude_from_autocast(model, names=KEEP_FP32_OPS):
    forward = model.forward

    def wrapped(*args, **kwargs):
        with fp32_ops(names):
            return forward(*args, **kwargs)

    model.forward = wrapped
    return model
'''
)


def render(keep: list[dict], fmt_label: str, model_name: str) -> str:
    """The file for ``keep``: op units by name, else the kept modules."""
    ops = [u["name"][3:] for u in keep if u["kind"] == "op"]
    names = ops if ops else sorted({m for u in keep for m in u["modules"]})
    values = {"fmt": fmt_label, "model": json.dumps(model_name), "names": json.dumps(names, indent=4)}
    return re.sub(r"\{(fmt|model|names)\}", lambda m: values[m.group(1)], _OPS if ops else _MODULES)
