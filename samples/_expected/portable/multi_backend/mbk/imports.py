"""Optional backends, imported only where installed."""

import importlib.util

import torch


def is_npu_available() -> bool:
    if importlib.util.find_spec("torch_npu") is None:
        return False
    import torch_npu  # noqa: F401

    return hasattr(torch, "npu") and torch.npu.is_available()


def is_xpu_available() -> bool:
    return hasattr(torch, "xpu") and torch.xpu.is_available()


try:
    # migrate[MIG508]: `flash_attn` needs the flash-attn CUDA package: it cannot be installed on an Ascend host. (see `migrate rules MIG508`)
    import flash_attn  # noqa: F401

    HAS_FLASH_ATTN = True
except ImportError:
    HAS_FLASH_ATTN = False
