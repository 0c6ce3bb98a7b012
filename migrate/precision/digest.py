"""Digest of a model's weights (parameters and buffers), recorded in a dump's meta."""

from __future__ import annotations

import hashlib
import zlib
from typing import Any


def weights_digest(model: Any) -> str:
    """blake2b over (name, dtype, shape, crc32 of the bytes) of every parameter and buffer.

    CRC32 runs at ~4 GB/s here against ~0.9 GB/s for blake2b over the raw bytes; the digest
    detects accidental differences between two machines' weights, not tampering."""
    import torch

    h = hashlib.blake2b(digest_size=16)
    for name, t in model.state_dict(keep_vars=False).items():
        t = t.detach()
        crc = 0
        if t.numel():
            flat = t.to("cpu").contiguous().reshape(-1)
            if flat.dtype == torch.bool:
                flat = flat.view(torch.uint8)
            crc = zlib.crc32(memoryview(flat.view(torch.uint8).numpy()))
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|{crc:08x}|".encode())
    return "blake2b-crc32:" + h.hexdigest()
