"""``init_process_group("hccl")`` on the emulated NPU: a c10d backend named hccl whose
process group is gloo. Collectives on NPU tensors reach the emulation's dispatch, which
hands gloo their CPU tensors; ``dist.get_backend()`` answers "hccl"."""

from __future__ import annotations

import torch.distributed as dist


def _create(store, rank, size, timeout):
    from torch.distributed import ProcessGroupGloo

    opts = ProcessGroupGloo._Options()
    opts._timeout = timeout
    opts._devices = [ProcessGroupGloo.create_default_device()]
    return ProcessGroupGloo(store, rank, size, opts)


def install() -> None:
    if not dist.is_available() or "hccl" in dist.Backend.backend_list:
        return
    dist.Backend.register_backend("hccl", _create, extended_api=False, devices=["cpu", "npu"])
