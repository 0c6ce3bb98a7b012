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


class BackgroundDigest:
    """Compute :func:`weights_digest` on a thread while the model runs (CRC32 releases the
    GIL). ``result()`` joins it and says whether any weight changed in the meantime."""

    def __init__(self, model: Any) -> None:
        import threading

        self._model = model
        self._versions = _versions(model)
        self._value: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="weights-digest", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = weights_digest(self._model)
        except BaseException as exc:  # noqa: BLE001 - re-raised in result()
            self._error = exc

    def result(self) -> tuple[str, bool]:
        """``(digest, stable)``; stable is False when weights were modified in place."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value or "", _versions(self._model) == self._versions


def _versions(model: Any) -> int:
    return sum(t._version for t in model.state_dict(keep_vars=True).values())
