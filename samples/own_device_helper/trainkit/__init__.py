"""A small trainer package that already names its device in one place (trainkit.accel)."""

from trainkit.accel import get_device_name, get_torch_device

__all__ = ["get_device_name", "get_torch_device"]
