"""Digest of a model's weights (parameters and buffers), recorded in a dump's meta."""

from __future__ import annotations

import hashlib
from typing import Any


def weights_digest(model: Any) -> str:
    """blake2b over (name, dtype, shape, bytes) of every parameter and buffer, in state order."""
    h = hashlib.blake2b(digest_size=16)
    for name, t in model.state_dict(keep_vars=False).items():
        t = t.detach()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.numel():
            flat = t.to("cpu").contiguous().reshape(-1)
            if flat.dtype.is_complex:
                import torch

                flat = torch.view_as_real(flat).reshape(-1)
            h.update(memoryview(flat.view(dtype=_byte_dtype()).numpy()))
    return "blake2b:" + h.hexdigest()


def _byte_dtype() -> Any:
    import torch

    return torch.uint8
