"""The casts of apex.amp: a model cast to float16 (O2, O3) and O1's casts around functions.

``cast_model`` follows apex's convert_network: every parameter and buffer goes to the dtype
except those of batchnorm layers with affine parameters when ``keep_batchnorm_fp32``; the
forward casts floating tensors among its inputs to that dtype and its outputs to float32 (or
``cast_model_outputs``); ``state_dict()`` gives float32 tensors, as apex's hook does.

O1 (``enable``): ``autocast("npu", float16)`` for the thread that called ``amp.initialize``,
and the functions given to ``register_half_function`` / ``register_float_function`` /
``register_promote_function`` before it wrapped to cast their floating tensor arguments;
``disabled()`` turns both off for a block (apex's ``amp.disable_casts``).
"""

from __future__ import annotations

import contextlib
import functools

import torch

_STATE = {"active": False}
_REGISTRY: list[tuple[object, str, str]] = []  # (module, name, "half" | "float" | "promote")


def _cast(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() and value.dtype != dtype else value
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        cast = [_cast(v, dtype) for v in value]
        return type(value)(*cast) if hasattr(value, "_fields") else type(value)(cast)
    return value


def _convert_module(module: torch.nn.Module, dtype: torch.dtype) -> None:
    for param in module.parameters(recurse=False):
        if param.is_floating_point():
            param.data = param.data.to(dtype)
            if param.grad is not None:
                param.grad = param.grad.to(dtype)
    for name, buf in module.named_buffers(recurse=False):
        if buf.is_floating_point():
            module._buffers[name] = buf.to(dtype)


def _keeps_float32(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.affine


def cast_model(model: torch.nn.Module, dtype: torch.dtype, keep_batchnorm_fp32: bool, outputs=None) -> None:
    for module in model.modules():
        if not (keep_batchnorm_fp32 and _keeps_float32(module)):
            _convert_module(module, dtype)
    _patch_forward(model, dtype, outputs if outputs is not None else torch.float32)
    for module in model.modules():
        module._register_state_dict_hook(_float32_state)


def cast_outputs(model: torch.nn.Module, dtype: torch.dtype) -> None:
    _patch_forward(model, None, dtype)


def _patch_forward(model: torch.nn.Module, inputs, outputs) -> None:
    old = model.forward

    @functools.wraps(old)
    def forward(*args, **kwargs):
        if inputs is not None:
            args, kwargs = _cast(args, inputs), _cast(kwargs, inputs)
        return _cast(old(*args, **kwargs), outputs)

    model.forward = forward


def _float32_state(module, state_dict, prefix, local_metadata) -> None:
    for key, value in state_dict.items():
        if key.startswith(prefix) and isinstance(value, torch.Tensor) and value.dtype == torch.float16:
            state_dict[key] = value.to(torch.float32)


def enable() -> None:
    """O1's casts, from now on in this thread."""
    torch.set_autocast_dtype("npu", torch.float16)
    torch.set_autocast_enabled("npu", True)
    _STATE["active"] = True
    wrappers = {"half": half_function, "float": float_function, "promote": promote_function}
    for module, name, kind in _REGISTRY:
        setattr(module, name, wrappers[kind](getattr(module, name)))
    _REGISTRY.clear()


def end() -> None:
    """No O1 casts from now on (a later ``initialize`` with another opt level)."""
    if _STATE["active"]:
        torch.set_autocast_enabled("npu", False)
        _STATE["active"] = False


@contextlib.contextmanager
def disabled():
    was_autocast, was_active = torch.is_autocast_enabled("npu"), _STATE["active"]
    torch.set_autocast_enabled("npu", False)
    _STATE["active"] = False
    try:
        yield
    finally:
        torch.set_autocast_enabled("npu", was_autocast)
        _STATE["active"] = was_active


def _wrapper(fn, pick):
    @functools.wraps(fn)
    def cast_then_call(*args, **kwargs):
        if not _STATE["active"]:
            return fn(*args, **kwargs)
        dtype = pick(args, kwargs)
        return fn(*_cast(args, dtype), **_cast(kwargs, dtype))

    return cast_then_call


def _widest(args, kwargs) -> torch.dtype:
    values = [*args, *kwargs.values()]
    found = [a.dtype for a in values if isinstance(a, torch.Tensor) and a.is_floating_point()]
    return torch.float32 if torch.float32 in found or not found else found[0]


def half_function(fn):
    """Under O1 ``fn`` gets its floating tensor arguments in float16."""
    return _wrapper(fn, lambda a, k: torch.float16)


def float_function(fn):
    """Under O1 ``fn`` gets its floating tensor arguments in float32."""
    return _wrapper(fn, lambda a, k: torch.float32)


def promote_function(fn):
    """Under O1 ``fn`` gets its floating tensor arguments in the widest of their dtypes."""
    return _wrapper(fn, _widest)


def _register(module, name: str, kind: str) -> None:
    if not hasattr(module, name):
        raise ValueError(f"No function named {name} in module {module}.")
    _REGISTRY.append((module, name, kind))


def register_half_function(module, name: str) -> None:
    _register(module, name, "half")


def register_float_function(module, name: str) -> None:
    _register(module, name, "float")


def register_promote_function(module, name: str) -> None:
    _register(module, name, "promote")
