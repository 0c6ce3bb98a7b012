"""The ``torch.npu`` module of the emulation (also ``torch_npu.npu``): devices, sync, RNG,
memory figures, streams and events, AMP entry points. Names of torch_npu.npu this module
does not implement are filled in by surface.py and raise "not emulated"."""

from __future__ import annotations

import math
import types

import torch

from migrate.emulate import amp, legacy_types, memory, streams
from migrate.emulate.current import CURRENT as _CURRENT
from migrate.emulate.current import DEVICE_FUNCTIONS, device_count
from migrate.emulate.current import index as _index

DEVICE_NAME = "Ascend (emulated on CPU)"


def set_compile_mode(jit_compile=True, *args, **kwargs) -> None:
    """torch_npu.npu.set_compile_mode: the mode is kept for the run's performance section
    (operators compiled per shape, PERF102), nothing else changes."""
    from migrate.emulate.monitor import RECORD

    rec = RECORD["current"]
    if rec is not None:
        rec.perf.jit_compile = bool(jit_compile)


def current_device() -> int:
    return _CURRENT["device"]


def set_device(device) -> None:
    idx = _index(device)
    if not 0 <= idx < device_count():
        raise RuntimeError(f"npu:{idx}: invalid device ordinal (the emulation has {device_count()} devices)")
    _CURRENT["device"] = idx


class device:  # noqa: N801 - torch_npu's name
    """Context manager that changes the current device (``torch.npu.device(1)``)."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev: int | None = None  # the current device when entered

    def __enter__(self):
        self.prev = _CURRENT["device"]
        set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            _CURRENT["device"] = self.prev
        return False


class device_of(device):  # noqa: N801
    def __init__(self, obj):
        super().__init__(obj.device if obj.device.type == "npu" else _CURRENT["device"])


def synchronize(device=None) -> None:
    from migrate.emulate.monitor import record_sync

    record_sync("torch.npu.synchronize()", depth=3)


def get_device_name(device=None) -> str:
    return DEVICE_NAME


def get_device_properties(device=None):
    return types.SimpleNamespace(
        name=DEVICE_NAME, total_memory=memory.total_bytes(), multi_processor_count=1, major=0, minor=0
    )


def get_device_capability(device=None):
    return None  # torch_npu answers None: NPUs have no CUDA compute capability


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16, torch.float32]


def is_support_inf_nan() -> bool:
    """torch_npu.npu.utils.is_support_inf_nan: True, as on the Ascend 910B and later chips
    whose float arithmetic keeps inf and NaN (the emulation computes with the CPU's, which
    does), so overflow is checked on the values (npu_check_overflow)."""
    return True


def npu_check_overflow(grad) -> bool:
    """torch_npu.npu.utils.npu_check_overflow on a chip that supports inf/NaN: whether the
    float sum of ``grad`` (a float or a tensor, read on the host) is inf or NaN."""
    if isinstance(grad, float):
        total = grad
    elif isinstance(grad, torch.Tensor):
        total = float(grad.float().sum())
    else:
        raise RuntimeError(f"npu_check_overflow: unsupported type {type(grad).__name__}")
    return math.isinf(total) or math.isnan(total)


def _settings(name: str, **defaults) -> types.SimpleNamespace:
    ns = types.SimpleNamespace(**defaults)
    ns.__doc__ = f"torch.npu.{name}: settings accepted and recorded; no effect on a CPU"
    return ns


def build_device_module() -> types.ModuleType:
    from migrate.emulate import rng

    mod = types.ModuleType("torch_npu.npu", __doc__)
    simple = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "_is_in_bad_fork": lambda: False,
        "_lazy_init": lambda: None,
        "is_bf16_supported": lambda *a, **k: True,
        "current_device": current_device,
        "device_count": device_count,
        "set_device": set_device,
        "device": device,
        "device_of": device_of,
        "synchronize": synchronize,
        "get_device_name": get_device_name,
        "get_device_properties": get_device_properties,
        "get_amp_supported_dtype": get_amp_supported_dtype,
        "get_device_capability": get_device_capability,
        "set_compile_mode": set_compile_mode,
        "is_jit_compile_false": lambda: True,
        "set_option": lambda *a, **k: None,
        "set_op_timeout_ms": lambda *a, **k: None,
        "matmul": _settings("matmul", allow_hf32=False),
        "conv": _settings("conv", allow_hf32=True),
        "config": _settings("config", allow_internal_format=False),
        "amp": amp.module(),
        "random": rng.module(),
        "memory": memory.module(),
        "streams": streams.module(),
    }
    for name, value in simple.items():
        setattr(mod, name, value)
    for sub in (rng, memory, streams):
        for name in sub.EXPORTS:
            setattr(mod, name, getattr(sub, name))
    for name, cls in legacy_types.make_types().items():
        setattr(mod, name, cls)
    for name in amp.TOP_LEVEL:
        setattr(mod, name, getattr(amp, name))
    mod.utils = types.ModuleType("torch_npu.npu.utils")
    mod.utils.get_cann_version = lambda module="CANN": "emulated"
    mod.utils.is_support_inf_nan = is_support_inf_nan
    mod.utils.npu_check_overflow = npu_check_overflow
    for name in (*DEVICE_FUNCTIONS, "get_device_properties"):
        setattr(mod.utils, name, getattr(mod, name))
    return mod
