"""CRC32 (the zlib / gzip polynomial) of the bytes dumps store and compare checks.

ISA-L's implementation (the ``isal`` package, an optional dependency of the ``torch``
extra; wheels for x86-64 and aarch64) runs about 5x faster than zlib's here (3.7 vs
0.7 GB/s) and gives the same values; zlib is used where it is not installed. Both
release the GIL on large buffers, so the dump writer and compare's read-ahead thread
checksum while the main thread works.
"""

from __future__ import annotations

from typing import Any

try:
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - depends on the installation
    from zlib import crc32 as _crc32


def crc32(data: Any, value: int = 0) -> int:
    """CRC32 of a bytes-like object (a numpy array: its bytes), continuing from ``value``."""
    return _crc32(memoryview(data), value)
