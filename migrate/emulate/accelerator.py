"""The device-generic API on the emulated NPU: ``torch.accelerator.*`` and the other
``torch._C._accelerator_*`` entry points that torch's Python code calls.

On an NPU host they reach torch_npu's C++ hooks and allocator (``NPUAllocator`` derives from
``c10::DeviceAllocator``); a Python backend has neither, so PyTorch's C++ would fail with an
internal assert. Each entry point is replaced here by one answering for the emulated device
(``torch.accelerator.synchronize()`` is a host sync in the report; memory figures are the
process's CPU figures, as ``torch.npu``'s are; the current stream is a ``torch.npu.Stream``).
Entry points without an emulation keep torch's own implementation, and a failure of it
becomes ``not emulated: torch.accelerator.NAME (called at FILE:LINE)``.
"""

from __future__ import annotations

import functools

import torch

# torch._C entry point -> the public name a user calls (for "not emulated" messages).
PUBLIC = {
    "_accelerator_synchronizeDevice": "torch.accelerator.synchronize",
    "_accelerator_getStream": "torch.accelerator.current_stream",
    "_accelerator_setStream": "torch.accelerator.set_stream",
    "_accelerator_getDeviceIndex": "torch.accelerator.current_device_index",
    "_accelerator_setDeviceIndex": "torch.accelerator.set_device_index",
    "_accelerator_exchangeDevice": "torch.accelerator.device_index",
    "_accelerator_maybeExchangeDevice": "torch.accelerator.device_index",
    "_accelerator_emptyCache": "torch.accelerator.empty_cache",
    "_accelerator_emptyHostCache": "torch.accelerator.empty_host_cache",
    "_accelerator_isAllocatorInitialized": "torch.accelerator.memory_stats",
    "_accelerator_getDeviceStats": "torch.accelerator.memory_stats",
    "_accelerator_resetAccumulatedStats": "torch.accelerator.reset_accumulated_memory_stats",
    "_accelerator_resetPeakStats": "torch.accelerator.reset_peak_memory_stats",
    "_accelerator_getMemoryInfo": "torch.accelerator.get_memory_info",
    "_accelerator_getDefaultGenerator": "torch.accelerator.random",
    "_accelerator_getDeviceCapability": "torch.accelerator.get_device_capability",
    "_accelerator_getAllocatorSettings": "torch.accelerator allocator settings",
    "_accelerator_setAllocatorSettings": "torch.accelerator allocator settings",
}


def _synchronize(device_index=None) -> None:
    from migrate.emulate.monitor import record_sync

    record_sync("torch.accelerator.synchronize()", depth=4)


def _get_stream(device_index=None):
    from migrate.emulate import streams

    return streams.current_stream(device_index)


def _set_stream(stream) -> None:
    from migrate.emulate import streams

    streams.set_stream(stream)


def _exchange(device_index: int) -> int:
    from migrate.emulate import device

    prev = device.current_device()
    if device_index is not None and device_index >= 0:
        device.set_device(device_index)
    return prev


def _set_index(device_index: int) -> None:
    from migrate.emulate import device

    if device_index is not None and device_index >= 0:
        device.set_device(device_index)


def _stats(device_index=None) -> dict:
    from migrate.emulate import memory

    return memory.memory_stats_as_nested_dict()


def _generator(device_index=None):
    from migrate.emulate import rng

    return rng.generator()


def _emulations() -> dict:
    from migrate.emulate import device, memory

    return {
        "_accelerator_synchronizeDevice": _synchronize,
        "_accelerator_getStream": _get_stream,
        "_accelerator_setStream": _set_stream,
        "_accelerator_getDeviceIndex": device.current_device,
        "_accelerator_setDeviceIndex": _set_index,
        "_accelerator_exchangeDevice": _exchange,
        "_accelerator_maybeExchangeDevice": _exchange,
        "_accelerator_emptyCache": memory.empty_cache,
        "_accelerator_emptyHostCache": memory.host_empty_cache,
        "_accelerator_isAllocatorInitialized": lambda: True,
        "_accelerator_getDeviceStats": _stats,
        "_accelerator_resetAccumulatedStats": memory.reset_accumulated_memory_stats,
        "_accelerator_resetPeakStats": memory.reset_peak_memory_stats,
        "_accelerator_getMemoryInfo": memory.mem_get_info,
        "_accelerator_getDefaultGenerator": _generator,
    }


def _guarded(name: str, original):
    """torch's own entry point, with its failures on the emulated device named plainly."""

    @functools.wraps(original)
    def call(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except (RuntimeError, NotImplementedError) as exc:
            from migrate.emulate.callsite import not_emulated

            raise not_emulated(PUBLIC.get(name, f"torch._C.{name}")) from exc

    return call


def install() -> None:
    """Replace every ``torch._C._accelerator_*`` function of this torch (idempotent)."""
    if getattr(torch._C, "_migrate_emulated", False):
        return
    emulated = _emulations()
    for name in [n for n in dir(torch._C) if n.startswith("_accelerator_")]:
        original = getattr(torch._C, name)
        if not callable(original):
            continue
        setattr(torch._C, name, emulated.get(name) or _guarded(name, original))
    torch._C._migrate_emulated = True
