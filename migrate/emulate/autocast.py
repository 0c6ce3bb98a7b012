"""autocast("npu"): the ops of emulate.yaml's ``autocast`` lists get a kernel on the
AutocastPrivateUse1 key that casts their floating arguments (lower precision: to the
autocast dtype; float32 list: to float32; float64 never) and redispatches below autocast,
as PyTorch's CUDA autocast does. Every other op falls through."""

from __future__ import annotations

import torch

from migrate.emulate.data import load_yaml_section

KEY = "AutocastPrivateUse1"
_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_CASTABLE = (torch.float16, torch.bfloat16, torch.float32)


def _cast(obj, dtype):
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.dtype in _CASTABLE and obj.dtype != dtype else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cast(o, dtype) for o in obj)
    return obj


def _kernel(op, lower: bool):
    def cast_then_run(*args, **kwargs):
        dtype = torch.get_autocast_dtype("npu") if lower else torch.float32
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            return op(*_cast(args, dtype), **{k: _cast(v, dtype) for k, v in kwargs.items()})

    return cast_then_run


def install(fallback_lib) -> torch.library.Library:
    fallback_lib.fallback(torch.library.fallthrough_kernel, KEY)
    lib = torch.library.Library("aten", "IMPL")
    lists = load_yaml_section("autocast")
    for lower, names in ((True, lists["lower_precision"]), (False, lists["float32"])):
        for name in names:
            packet = getattr(torch.ops.aten, name, None)
            for overload in packet.overloads() if packet is not None else ():
                if "out" in overload:  # as on CUDA: out= variants are not autocast
                    continue
                op = getattr(packet, overload)
                full = name if overload == "default" else f"{name}.{overload}"
                lib.impl(full, _kernel(op, lower), KEY)
    return lib
