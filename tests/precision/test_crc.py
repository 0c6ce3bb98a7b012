"""The CRC32 dumps record is zlib's, whichever implementation computes it."""

from __future__ import annotations

import zlib

import numpy as np

from migrate.precision import crc
from migrate.precision.metrics.pair import norm


def test_crc32_matches_zlib_whole_and_chained():
    data = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
    assert crc.crc32(data) == zlib.crc32(data.tobytes())
    head = crc.crc32(data[:12345])
    assert crc.crc32(data[12345:], head) == zlib.crc32(data.tobytes())
    assert crc.crc32(b"") == 0


def test_norm_of_zeros_and_of_values_too_small_for_float32_squares():
    assert norm(np.zeros(5000, dtype=np.float32)) == 0.0
    tiny = np.full(10, 1e-25, dtype=np.float32)  # squares underflow in float32
    assert abs(norm(tiny) - float(tiny[0]) * 10**0.5) < 1e-31
    tiny[3] = 0.0
    assert norm(tiny) > 0.0
