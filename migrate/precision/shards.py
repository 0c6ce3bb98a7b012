"""Incremental safetensors writer: each tensor's bytes go to disk inside the hook.

Writing straight from the live tensor (before the hook returns) is itself the private
copy that protects the dump from later in-place ops, so nothing is cloned or buffered:
memory stays flat however large the model. A shard file reserves room for its header up
front; when the shard is full (bytes or header room) the header is written, padded with
spaces as the safetensors format allows, and the next shard starts.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO

DEFAULT_SHARD_BYTES = 64 * 1024 * 1024
HEADER_ROOM = 128 * 1024

_DTYPES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "complex64": "C64",
}


class ShardWriter:
    def __init__(self, out_dir: Path, shard_bytes: int = DEFAULT_SHARD_BYTES) -> None:
        self.out_dir = out_dir
        self.shard_bytes = shard_bytes
        self.files: list[str] = []
        self.bytes_written = 0
        self._count = 0
        self._file: BinaryIO | None = None
        self._header: dict[str, Any] = {}
        self._header_len = 2
        self._offset = 0

    def add(self, tensor: Any) -> tuple[str, str, str] | None:
        """Write a tensor's bytes now; ``(file, key, crc32 hex)``, or None for a dtype
        safetensors cannot hold (the record then keeps its stats only). complex128 is
        stored as its float64 real view (``storable`` says how)."""
        tensor = storable(tensor)
        dtype = _DTYPES.get(str(tensor.dtype).removeprefix("torch."))
        if dtype is None:
            return None
        data = _bytes_view(tensor)
        key = f"t{self._count:07d}"
        entry = {
            "dtype": dtype,
            "shape": list(tensor.shape),
            "data_offsets": [self._offset, self._offset + data.nbytes],
        }
        entry_len = len(json.dumps({key: entry}, separators=(",", ":")))
        full = self._offset + data.nbytes > self.shard_bytes and self._offset > 0
        if self._file is None or full or self._header_len + entry_len + 64 > HEADER_ROOM:
            self._rotate()
            entry["data_offsets"] = [0, data.nbytes]
        assert self._file is not None  # _rotate opened the next shard
        self._file.write(data)
        self._header[key] = entry
        self._header_len += entry_len
        self._offset += data.nbytes
        self._count += 1
        self.bytes_written += data.nbytes
        return self.files[-1], key, f"{zlib.crc32(memoryview(data)):08x}"

    def _rotate(self) -> None:
        self._finish()
        name = f"tensors-{len(self.files):05d}.safetensors"
        self.files.append(name)
        self._file = open(self.out_dir / name, "wb")  # noqa: SIM115 - closed in _finish
        self._file.seek(8 + HEADER_ROOM)
        self._header, self._header_len, self._offset = {}, 2, 0

    def _finish(self) -> None:
        if self._file is None:
            return
        header = json.dumps(self._header, separators=(",", ":")).encode()
        if len(header) > HEADER_ROOM:  # pragma: no cover - guarded by add()
            raise RuntimeError("safetensors header overflow")
        self._file.seek(0)
        self._file.write(struct.pack("<Q", HEADER_ROOM) + header.ljust(HEADER_ROOM, b" "))
        self._file.close()
        self._file = None

    def close(self) -> None:
        self._finish()


def storable(t: Any) -> Any:
    """complex128 (which safetensors lacks) as its float64 real view; others unchanged."""
    import torch

    return torch.view_as_real(t.detach()) if t.dtype == torch.complex128 else t


def _bytes_view(t: Any) -> Any:
    """The tensor's bytes as a numpy uint8 array (a view for contiguous CPU tensors)."""
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    return t.reshape(-1).view(torch.uint8).numpy()
