"""Registers the emulated NPU with PyTorch: PrivateUse1 renamed to ``npu`` through
``torch.utils.backend_registration._setup_privateuseone_for_python_backend`` (backend module
``torch.npu``, accelerator hooks, device guard), and one PrivateUse1 fallback kernel for
every ATen op, which runs it on the CPU (tensor.py).

``install()`` is idempotent; PyTorch allows one rename per process, so once installed the
emulation stays for the life of the process.
"""

from __future__ import annotations

import torch

_STATE: dict = {}


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


def _fallback(op, *args, **kwargs):
    from migrate.emulate.tensor import run

    return run(op, args, kwargs)


def install():
    """Make ``npu`` a device of this process; returns the ``torch.npu`` module."""
    if "module" in _STATE:
        return _STATE["module"]
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    from migrate.emulate.data import check_torch
    from migrate.emulate.device import build_device_module

    check_torch()
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", "npu"):
        raise RuntimeError(f"cannot emulate npu: PrivateUse1 is already {current!r}")
    module = build_device_module()
    _setup_privateuseone_for_python_backend("npu", module, _Hooks(), _Guard())
    lib = torch.library.Library("_", "IMPL")
    lib.fallback(_fallback, "PrivateUse1")
    # torch_npu registers its own autocast op lists in C++; here autocast("npu") is
    # accepted and computes in the dtypes it is given (docs/emulate.md).
    lib.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    _patch_pinning()
    _STATE.update(module=module, lib=lib)
    return module


def _patch_pinning() -> None:
    """Pinned host memory needs a C++ allocator hook a Python backend cannot give; NPU
    tensors are CPU memory already, so pinning for the emulated device keeps the tensor."""
    pin, is_pinned = torch.Tensor.pin_memory, torch.Tensor.is_pinned

    def pin_memory(self, device=None):
        if device is None or torch.device(device).type == "npu":
            return self
        return pin(self, device)

    def pinned(self, device=None):
        if device is None or torch.device(device).type == "npu":
            return False
        return is_pinned(self, device)

    torch.Tensor.pin_memory, torch.Tensor.is_pinned = pin_memory, pinned


def installed() -> bool:
    return "module" in _STATE
