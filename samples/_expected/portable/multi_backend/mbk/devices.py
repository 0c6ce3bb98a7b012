"""Device dispatch: one place that knows every backend."""

import torch

from mbk.imports import is_npu_available, is_xpu_available

SUPPORTED_DEVICES = ("cpu", "cuda", "xpu", "npu")
PIN_MEMORY_DEVICES = ["cuda", "npu"]


def default_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    elif is_npu_available():
        return "npu"
    elif is_xpu_available():
        return "xpu"
    return "cpu"


def device_module(device_type: str):
    if device_type == "cuda":
        return torch.cuda
    elif device_type == "npu":
        return torch.npu
    return torch.cpu


def distributed_type() -> str:
    if torch.cuda.is_available():
        return "MULTI_GPU"
    elif is_npu_available():
        return "MULTI_NPU"
    return "NO"


def synchronize(device_type: str) -> None:
    if device_type in PIN_MEMORY_DEVICES:
        device_module(device_type).synchronize()


def backend_for(device_type: str) -> str:
    return "hccl" if device_type == "npu" else "nccl" if device_type == "cuda" else "gloo"
