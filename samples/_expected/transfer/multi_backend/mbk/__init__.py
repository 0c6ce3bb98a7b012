"""A small library that already runs on several backends (CUDA, XPU, NPU, CPU)."""

from mbk.devices import SUPPORTED_DEVICES, default_device, device_module

__all__ = ["SUPPORTED_DEVICES", "default_device", "device_module"]
