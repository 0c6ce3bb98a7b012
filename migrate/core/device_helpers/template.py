"""Device helpers: which device this code runs on (CUDA GPU, Ascend NPU, CPU).

One place decides the device, so the rest of the code names no backend. On an
Ascend host (torch_npu installed) every call reaches the NPU; elsewhere the
code does exactly what it did when it named CUDA.
"""

import torch


def get_device_type() -> str:
    """The device type: "npu" (Ascend), else "cuda" or "cpu"."""
    npu = getattr(torch, "npu", None)  # there on an Ascend host
    if npu is not None and npu.is_available():
        return "npu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def get_device_module():
    """torch.npu on an Ascend host, else torch.cuda.

    On a host without a GPU its calls do what they did before the port:
    no-ops, zeros, errors.
    """
    if get_device_type() == "npu":
        return torch.npu
    return torch.cuda


def get_amp_device_type() -> str:
    """The device type for autocast and GradScaler.

    "cuda" without an accelerator, so they stay disabled on a CPU-only host
    as before.
    """
    device_type = get_device_type()
    return "cuda" if device_type == "cpu" else device_type


def get_dist_backend() -> str:
    """The collective backend: "hccl" on an Ascend host, else "nccl"."""
    return "hccl" if get_device_type() == "npu" else "nccl"


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()
