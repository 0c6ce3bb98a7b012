"""Device helpers: which device this code runs on (CUDA GPU, Ascend NPU, CPU)."""

import torch


def get_device_type() -> str:
    """The device type: "npu" (Ascend), else "cuda" or "cpu"."""
    npu = getattr(torch, "npu", None)  # there on an Ascend host
    if npu is not None and npu.is_available():
        return "npu"
    return "cuda" if torch.cuda.is_available() else "cpu"
