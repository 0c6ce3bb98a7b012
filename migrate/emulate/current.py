"""The emulated process's current NPU: its index, and how a device argument names one.
Shared by torch.npu's device functions (device.py), streams and RNG, which device.py
exports: it sits below them so none imports the module that imports it."""

from __future__ import annotations

import torch

from migrate.emulate.data import settings

CURRENT = {"device": 0}

# torch.npu's device functions, which torch_npu.npu.utils exports again and transfer_to_npu
# puts under torch.cuda: one list for both (device.py, transfer.py).
DEVICE_FUNCTIONS = (
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "synchronize",
    "get_device_name",
)


def index(device) -> int:
    """The device index ``device`` names (None: the current one; "npu", "npu:1", 1)."""
    if device is None:
        return CURRENT["device"]
    if isinstance(device, int):
        return device
    dev = torch.device(device)
    if dev.type != "npu":
        raise ValueError(f"Expected a npu device, but got: {dev}")
    return CURRENT["device"] if dev.index is None else dev.index


def device_count() -> int:
    return settings().device_count
