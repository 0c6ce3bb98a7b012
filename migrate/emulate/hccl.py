"""``init_process_group("hccl")`` on the emulated NPU: a c10d backend named hccl whose
process group is gloo. Collectives on NPU tensors reach the emulation's dispatch, which
hands gloo their CPU tensors; ``dist.get_backend()`` answers "hccl".

A group made without naming a backend for the CPU (``init_device_mesh("npu", ...)`` or
``init_process_group()`` with no prior group, which map only the accelerator, npu, to
hccl; ``init_process_group("npu:hccl")``) gets hccl for the CPU too, as naming "hccl"
gives it: the CPU tensors the emulation hands the collectives need a backend.

``torch.distributed.is_hccl_available``, which torch_npu adds when torch loads it (its
``torch.backends`` entry point: no ``import torch_npu`` needed), answers as torch_npu's
does: whether a backend named hccl is registered."""

from __future__ import annotations

import torch.distributed as dist


def _create(store, rank, size, timeout):
    from torch.distributed import ProcessGroupGloo

    opts = ProcessGroupGloo._Options()
    opts._timeout = timeout
    opts._devices = [ProcessGroupGloo.create_default_device()]
    return ProcessGroupGloo(store, rank, size, opts)


def is_hccl_available() -> bool:
    """torch_npu.distributed.is_hccl_available: ``"hccl" in Backend.backend_list``."""
    return "hccl" in dist.Backend.backend_list


def _patch_backend_config() -> None:
    config = dist.distributed_c10d.BackendConfig
    init = config.__init__
    if getattr(init, "__emulated__", False):
        return

    def __init__(self, backend) -> None:
        init(self, backend)
        found = self.device_backend_map
        if found.get("npu") == "hccl" and "cpu" not in found:
            found["cpu"] = found["npu"]

    __init__.__emulated__ = True
    config.__init__ = __init__


def install() -> None:
    if not dist.is_available():
        return
    _patch_backend_config()
    dist.is_hccl_available = is_hccl_available
    if "hccl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("hccl", _create, extended_api=False, devices=["cpu", "npu"])
