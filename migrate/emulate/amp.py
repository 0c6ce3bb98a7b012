"""``torch.npu.amp`` / ``torch_npu.npu.amp``: PyTorch's device-generic AMP for device "npu"."""

from __future__ import annotations

import functools
import types

import torch

TOP_LEVEL = ("is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype")


class autocast(torch.amp.autocast_mode.autocast):  # noqa: N801 - torch_npu's name
    """``torch.npu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.npu.amp.GradScaler(...)``: torch.amp.GradScaler on device "npu"."""

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
        dynamic=True,
    ):
        super().__init__(
            "npu",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )


def install() -> None:
    """``torch.amp.GradScaler("npu")`` (what a portable port writes) as torch_npu's: its
    ``unscale_`` computes 1/scale in float64, inside torch, which torch_npu's GradScaler does
    not; that is no finding about the user's code (idempotent)."""
    unscale = torch.amp.GradScaler.unscale_
    if getattr(unscale, "__emulated__", False):
        return

    @functools.wraps(unscale)
    def unscale_(self, optimizer):
        if self._device != "npu":
            return unscale(self, optimizer)
        from migrate.emulate.monitor import unmonitored

        with unmonitored():
            return unscale(self, optimizer)

    unscale_.__emulated__ = True
    torch.amp.GradScaler.unscale_ = unscale_


custom_fwd = functools.partial(torch.amp.custom_fwd, device_type="npu")
custom_bwd = functools.partial(torch.amp.custom_bwd, device_type="npu")


def is_autocast_enabled() -> bool:
    return torch.is_autocast_enabled("npu")


def set_autocast_enabled(enabled: bool) -> None:
    torch.set_autocast_enabled("npu", enabled)


def get_autocast_dtype() -> torch.dtype:
    return torch.get_autocast_dtype("npu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    torch.set_autocast_dtype("npu", dtype)


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.npu.amp", __doc__)
    mod.autocast, mod.GradScaler = autocast, GradScaler
    mod.custom_fwd, mod.custom_bwd = custom_fwd, custom_bwd
    mod.autocast_mode = types.ModuleType("torch_npu.npu.amp.autocast_mode")
    mod.autocast_mode.autocast = autocast
    mod.autocast_mode.custom_fwd, mod.autocast_mode.custom_bwd = custom_fwd, custom_bwd
    mod.grad_scaler = types.ModuleType("torch_npu.npu.amp.grad_scaler")
    mod.grad_scaler.GradScaler = GradScaler
    mod.common = types.ModuleType("torch_npu.npu.amp.common")
    mod.common.amp_definitely_not_available = lambda: False
    return mod
