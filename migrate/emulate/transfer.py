"""torch_npu.contrib.transfer_to_npu: importing it makes CUDA spellings run on the NPU. The
emulation applies the part scripts rely on most: ``Tensor.cuda``/``Module.cuda`` move to
the NPU, the ``torch.cuda`` device functions answer for the NPU, and a process group asked
for "nccl" gets "hccl". Device strings ("cuda:0") are not rewritten; the run's report says
so."""

from __future__ import annotations

import types

from migrate.emulate.current import DEVICE_FUNCTIONS

_PATCHED = (
    *DEVICE_FUNCTIONS,
    "manual_seed",
    "manual_seed_all",
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
)


def _apply() -> None:
    import torch

    from migrate.emulate.monitor import record_note

    torch.Tensor.cuda = torch.Tensor.npu
    torch.nn.Module.cuda = torch.nn.Module.npu
    for name in _PATCHED:
        setattr(torch.cuda, name, getattr(torch.npu, name))
    _hccl_for_nccl(torch.distributed)
    record_note(
        "torch_npu.contrib.transfer_to_npu imported: Tensor.cuda/Module.cuda and "
        "torch.cuda device functions map to the emulated NPU, the nccl backend to hccl; "
        "'cuda' device strings are not rewritten"
    )


def _hccl_for_nccl(dist) -> None:
    """init_process_group("nccl") / new_group(backend="nccl") ask for "hccl", as
    transfer_to_npu's wrappers do."""
    for name in ("init_process_group", "new_group"):
        original = getattr(dist, name, None)
        if original is None:
            continue

        def wrapper(*args, __original=original, __name=name, **kwargs):
            if __name == "init_process_group" and args and str(args[0]).lower() == "nccl":
                args = ("hccl", *args[1:])
            if str(kwargs.get("backend", "")).lower() == "nccl":
                kwargs["backend"] = "hccl"
            return __original(*args, **kwargs)

        setattr(dist, name, wrapper)


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.contrib.transfer_to_npu", __doc__)
    mod.__on_import__ = _apply
    return mod
