"""``torch.save`` / ``torch.load`` of NPU tensors, with torch_npu's semantics.

torch_npu saves an NPU tensor's storage with the location ``npu:N``; ``torch.load`` puts it
back on the NPU unless ``map_location`` maps it elsewhere (``"cpu"``, a dict, a function),
and ``map_location="npu"`` moves CPU checkpoints onto the NPU. The emulation writes the same
files (``_rebuild_tensor_v2`` over a storage tagged ``npu:0``, readable on a CPU host with
``map_location="cpu"``), but an emulated NPU tensor cannot own an NPU *storage*: storages
bound for the NPU are restored on the CPU, remembered, and the tensors built on them are
moved to the NPU once ``torch.load`` has built the object.
"""

from __future__ import annotations

import collections
import re
import threading

import torch

_NPU_LOCATION = re.compile(r"^npu(:\d+)?$")
_SAVING: set[int] = set()  # data_ptr of CPU storages held by NPU tensors being saved
_LOADING = threading.local()  # .marks: storages restored for the NPU in the running load


def reduce_npu(tensor):
    """An NPU tensor's pickle form: torch's own, over its values' storage tagged npu (a
    parameter on the NPU is an NpuTensor marked ``_is_param``: rebuilt as a Parameter)."""
    if getattr(tensor, "_is_param", False):
        return (
            torch._utils._rebuild_parameter,
            (tensor.detach(), tensor.requires_grad, collections.OrderedDict()),
        )
    data = tensor._data.detach()
    storage = data.untyped_storage()
    _SAVING.add(storage.data_ptr())
    typed = torch.storage.TypedStorage(wrap_storage=storage, dtype=data.dtype, _internal=True)
    return (
        torch._utils._rebuild_tensor_v2,
        (
            typed,
            data.storage_offset(),
            tuple(data.size()),
            data.stride(),
            tensor.requires_grad,
            collections.OrderedDict(),
        ),
    )


def _tag(storage):
    if storage.device.type == "cpu" and storage.data_ptr() in _SAVING and storage.nbytes():
        return "npu:0"
    return None


def _restore(storage, location):
    """Storages bound for the NPU stay on the CPU, remembered for the move after the load."""
    marks = getattr(_LOADING, "marks", None)
    if marks is None or not _NPU_LOCATION.match(str(location)):
        return None
    marks.add(storage.data_ptr())
    return storage


def _move(obj, marks: set, seen: set, depth: int = 0):
    """``obj`` with every CPU tensor over a remembered storage moved to the NPU."""
    if depth > 64 or id(obj) in seen:
        return obj
    if isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu" or obj.untyped_storage().data_ptr() not in marks:
            return obj
        moved = obj.detach().to("npu")
        if isinstance(obj, torch.nn.Parameter):
            return torch.nn.Parameter(moved, requires_grad=obj.requires_grad)
        return moved.requires_grad_(obj.requires_grad)
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module):  # parameters and buffers as .to() moves them
        obj._apply(lambda t: _move(t, marks, seen, depth + 1))
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            obj[key] = _move(value, marks, seen, depth + 1)
        return obj
    if isinstance(obj, list):
        obj[:] = [_move(v, marks, seen, depth + 1) for v in obj]
        return obj
    if isinstance(obj, tuple):
        items = [_move(v, marks, seen, depth + 1) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if not isinstance(obj, type):
        _move_attributes(obj, marks, seen, depth)
    return obj


def _move_attributes(obj, marks: set, seen: set, depth: int) -> None:
    """Move the tensors an object holds in its ``__dict__`` and its slots."""
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        for key, value in list(state.items()):
            if key in _MODULE_TENSORS and isinstance(obj, torch.nn.Module):
                continue
            moved = _move(value, marks, seen, depth + 1)
            if moved is not value:  # into __dict__ as unpickling put it: a class's own
                state[key] = moved  # __setattr__ may forward elsewhere
    for name in _slots(type(obj)):
        _move_slot(obj, name, marks, seen, depth)


_MODULE_TENSORS = ("_parameters", "_buffers")  # moved by Module._apply


def _slots(cls: type) -> list[str]:
    """The slot names of ``cls`` and its bases (kornia's TensorWrapper keeps its tensor in
    one, ``__slots__ = ("_data", ...)``)."""
    names = []
    for klass in cls.__mro__[:16]:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [n for n in slots if isinstance(n, str)]
    return [n for n in names if n not in ("__dict__", "__weakref__")][:64]


def _move_slot(obj, name: str, marks: set, seen: set, depth: int) -> None:
    """Move the tensor a slot holds, past the class's own __getattr__/__setattr__."""
    try:
        value = object.__getattribute__(obj, name)
    except AttributeError:
        return
    moved = _move(value, marks, seen, depth + 1)
    if moved is not value:
        object.__setattr__(obj, name, moved)


def install() -> None:
    """Register the npu location with torch.serialization and wrap torch.load."""
    if getattr(torch.load, "__emulated__", False):
        return
    torch.serialization.register_package(5, _tag, _restore)
    load, save = torch.load, torch.save

    def npu_load(f, map_location=None, *args, **kwargs):
        outer = getattr(_LOADING, "marks", None)
        marks: set[int] = set()  # data_ptr()s of the storages restored for the NPU
        _LOADING.marks = marks
        try:
            obj = load(f, map_location, *args, **kwargs)
        finally:
            _LOADING.marks = outer
        return _move(obj, marks, set()) if marks else obj

    def npu_save(obj, f, *args, **kwargs):
        try:
            return save(obj, f, *args, **kwargs)
        finally:
            _SAVING.clear()

    for new, old in ((npu_load, load), (npu_save, save)):
        new.__doc__, new.__name__ = old.__doc__, old.__name__
        new.__wrapped__ = old  # type: ignore[union-attr]
        new.__emulated__ = True  # type: ignore[union-attr]
    torch.load, torch.save = npu_load, npu_save
