"""``torch.npu.FloatTensor`` and the other legacy tensor types torch_npu defines (71
ModelZoo-PyTorch files name ``torch.npu.FloatTensor``: docs/emulate.md). As torch's
``torch.cuda.FloatTensor``: calling one builds a tensor of its dtype on the current NPU
(``FloatTensor([0.0])`` from data, ``FloatTensor(3)`` uninitialised of that size),
``isinstance(t, torch.npu.FloatTensor)`` holds for a dense NPU tensor of that dtype, and
``t.type(torch.npu.FloatTensor)`` casts and moves there (``t.type()`` already answers
``'torch.npu.FloatTensor'``: PyTorch names a PrivateUse1 tensor's type by its backend)."""

from __future__ import annotations

import torch

DTYPES = {
    "FloatTensor": torch.float32,
    "DoubleTensor": torch.float64,
    "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16,
    "ByteTensor": torch.uint8,
    "CharTensor": torch.int8,
    "ShortTensor": torch.int16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
    "BoolTensor": torch.bool,
}


class _LegacyType(type):
    dtype: torch.dtype

    def __call__(cls, *args, **kwargs):
        device = kwargs.pop("device", None)
        if device is not None and torch.device(device).type != "npu":
            raise RuntimeError(f"legacy constructor of {cls.__module__}.{cls.__name__} expects an npu device")
        cpu_type = getattr(torch, cls.__name__)
        return cpu_type(*args, **kwargs).to(device or f"npu:{torch.npu.current_device()}")

    def __instancecheck__(cls, obj) -> bool:
        return (
            isinstance(obj, torch.Tensor)
            and obj.device.type == "npu"
            and obj.layout == torch.strided
            and obj.dtype == cls.dtype
        )

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def make_types() -> dict[str, type]:
    return {
        name: _LegacyType(name, (), {"__module__": "torch.npu", "dtype": dtype, "is_sparse": False})
        for name, dtype in DTYPES.items()
    }


def install_type_cast() -> None:
    """``Tensor.type(torch.npu.FloatTensor)``: PyTorch's C++ ``type`` takes a string, a dtype
    or one of its own tensor types; a legacy NPU type is handed over by its name."""
    original = torch.Tensor.type
    if getattr(original, "__emulated__", False):
        return

    def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - Tensor.type's name
        if isinstance(dtype, _LegacyType):
            dtype = f"torch.npu.{dtype.__name__}"
        if dtype is None:
            return original(self)
        return original(self, dtype, non_blocking, **kwargs)

    type.__doc__, type.__emulated__ = original.__doc__, True
    torch.Tensor.type = type
