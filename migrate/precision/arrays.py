"""Tensors of a dump as numpy arrays, without torch: what `migrate compare` reads.

Importing torch costs about two seconds of CPU, more than comparing a 26 M-parameter
model's dump; compare reads the shards itself. A shard is a safetensors file (8-byte
little-endian header length, a JSON header naming each tensor's dtype, shape and byte
range, then the bytes). It is memory-mapped; each tensor is a zero-copy view, checked
against its recorded CRC32 on the stored bytes. safetensors' own numpy loader cannot hold
bfloat16 (numpy has no such type), so the header is read here - bounded and checked: a
header past the file, a range outside it, or a shape that does not match its bytes is a
UsageError naming the shard.

bfloat16 is widened to float32 exactly (its bits are the top half of a float32's);
float8 formats are widened through a 256-entry table.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.precision import crc

_NUMPY = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "U16": "<u2",
    "U32": "<u4",
    "U64": "<u8",
    "BOOL": "u1",
    "BF16": "<u2",
    "F8_E4M3": "u1",
    "F8_E5M2": "u1",
    "C64": "<c8",
}
MAX_HEADER = 64 * 1024 * 1024


class Shard:
    """One memory-mapped shard; ``raw(key)`` is a view of a tensor's stored bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, 2)
                fh.seek(0)
                head = fh.read(8)
                if len(head) != 8:
                    raise _bad(path, "not a tensor file (too short)")
                (length,) = struct.unpack("<Q", head)
                if length > min(MAX_HEADER, size - 8):
                    raise _bad(path, "tensor file header runs past the file")
                header = json.loads(fh.read(length))
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested JSON
            raise UsageError(
                f"{escape(str(path))}: cannot open tensor file: {escape(str(exc))[:200]}"
            ) from None
        if not isinstance(header, dict):
            raise _bad(path, "tensor file header is not an object")
        self.header, self.start, self.size = header, 8 + length, size

    def raw(self, key: str) -> tuple[Any, str]:
        """``(uint8-compatible array of the stored bytes, safetensors dtype)``."""
        import numpy as np

        entry = self.header.get(key)
        if not isinstance(entry, dict):
            raise _bad(self.path, f"no tensor {escape(repr(key))[:80]}")
        dtype, shape, span = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if (
            dtype not in _NUMPY
            or not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
            or not isinstance(span, list)
            or len(span) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in span)
        ):
            raise _bad(self.path, f"tensor {escape(repr(key))[:80]} has a bad header entry")
        begin, end = self.start + span[0], self.start + span[1]
        item = np.dtype(_NUMPY[dtype]).itemsize
        if not self.start <= begin <= end <= self.size or end - begin != math.prod(shape) * item:
            what = "lies outside the file or does not match its shape"
            raise _bad(self.path, f"tensor {escape(repr(key))[:80]} {what}")
        data = np.frombuffer(self._map, dtype=np.uint8, count=end - begin, offset=begin)
        return data, dtype

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            try:
                self._map.close()
            except BufferError:  # arrays still view it: the mapping goes with them
                pass


def _bad(path: Path, what: str) -> UsageError:
    return UsageError(f"{escape(str(path))}: {what}")


def crc32(data: Any) -> int:
    return crc.crc32(data) if data.size else 0


def decode(data: Any, dtype: str, shape: list[int]) -> Any:
    """The stored bytes as an array of a numpy type: bfloat16 and float8 widened exactly
    to float32, bool as uint8, everything else as stored."""
    import numpy as np

    if dtype == "BF16":
        wide = data.view("<u2").astype(np.uint32) << 16
        return wide.view(np.float32).reshape(shape)
    if dtype in ("F8_E4M3", "F8_E5M2"):
        return _float8_table(dtype)[data].reshape(shape)
    return data.view(_NUMPY[dtype]).reshape(shape)


def _float8_table(dtype: str) -> Any:
    import numpy as np

    table = _F8.get(dtype)
    if table is None:
        exp_bits, man_bits, bias = (4, 3, 7) if dtype == "F8_E4M3" else (5, 2, 15)
        values = []
        for byte in range(256):
            sign = -1.0 if byte & 0x80 else 1.0
            exp = (byte >> man_bits) & ((1 << exp_bits) - 1)
            man = byte & ((1 << man_bits) - 1)
            top = (1 << exp_bits) - 1
            if dtype == "F8_E4M3" and exp == top and man == (1 << man_bits) - 1:
                values.append(math.nan)  # e4m3fn: no infinities, one NaN pattern
            elif dtype == "F8_E5M2" and exp == top:
                values.append(sign * math.inf if man == 0 else math.nan)
            elif exp == 0:
                values.append(sign * man * 2.0 ** (1 - bias - man_bits))
            else:
                values.append(sign * (1 + man / (1 << man_bits)) * 2.0 ** (exp - bias))
        table = _F8[dtype] = np.array(values, dtype=np.float32)
    return table


_F8: dict[str, Any] = {}


def from_torch(t: Any) -> Any:
    """A torch tensor as a numpy array the metrics take (floats of fewer than 32 bits
    widened, complex as real pairs, bool as uint8); numpy arrays pass through."""
    import numpy as np

    if isinstance(t, np.ndarray):
        return t
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    elif t.is_floating_point() and t.dtype not in (torch.float32, torch.float64):
        t = t.float()
    return t.numpy()
