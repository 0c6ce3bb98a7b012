"""Which device the trainer runs on: decided here, so the rest of the package names no backend."""

import importlib.util

import torch


def is_npu_available() -> bool:
    if importlib.util.find_spec("torch_npu") is None:
        return False
    return hasattr(torch, "npu") and torch.npu.is_available()


def get_device_name() -> str:
    """"cuda", "npu" or "cpu"."""
    if torch.npu.is_available():
        return "npu"
    if is_npu_available():
        return "npu"
    return "cpu"


def get_torch_device():
    """The torch module of the device (torch.cuda where there is none, whose calls are no-ops)."""
    name = get_device_name()
    return getattr(torch, name) if name != "cpu" else torch.npu
