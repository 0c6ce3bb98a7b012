"""Device helpers: which device this code runs on (CUDA GPU, Ascend NPU, CPU)."""

import torch


def get_device_type() -> str:
    """The device type: "cuda" or "npu" (Ascend), else "cpu"."""
    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    if accelerator is not None and accelerator.is_available():
        device_type = accelerator.current_accelerator().type
        if device_type in ("cuda", "npu"):
            return device_type
    return "cuda" if torch.cuda.is_available() else "cpu"
