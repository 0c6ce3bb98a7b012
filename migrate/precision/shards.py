"""Incremental safetensors writer: tensors go to numbered shard files, flushed as they fill.

Memory stays bounded by about two shards: one being filled, one being written by a
background thread (file I/O overlaps with the model's forward pass).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

DEFAULT_SHARD_BYTES = 64 * 1024 * 1024


class ShardWriter:
    def __init__(self, out_dir: Path, shard_bytes: int = DEFAULT_SHARD_BYTES) -> None:
        self.out_dir = out_dir
        self.shard_bytes = shard_bytes
        self._buf: dict[str, Any] = {}
        self._buf_bytes = 0
        self._shard = 0
        self._count = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dump-writer")
        self._pending: Future | None = None
        self.files: list[str] = []
        self.bytes_written = 0

    def current_file(self) -> str:
        return f"tensors-{self._shard:05d}.safetensors"

    def add(self, tensor: Any) -> tuple[str, str]:
        """Queue a (private, contiguous, CPU) tensor; returns ``(file, key)``."""
        key = f"t{self._count:07d}"
        self._count += 1
        file = self.current_file()
        self._buf[key] = tensor
        self._buf_bytes += tensor.numel() * tensor.element_size()
        if self._buf_bytes >= self.shard_bytes:
            self.flush()
        return file, key

    def flush(self) -> None:
        if not self._buf:
            return
        self._wait()
        path = self.out_dir / self.current_file()
        self.files.append(path.name)
        self.bytes_written += self._buf_bytes
        self._pending = self._pool.submit(_save, self._buf, path)
        self._buf, self._buf_bytes = {}, 0
        self._shard += 1

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.result()
            self._pending = None

    def close(self) -> None:
        try:
            self.flush()
            self._wait()
        finally:
            self._pool.shutdown(wait=True)


def _save(tensors: dict[str, Any], path: Path) -> None:
    from safetensors.torch import save_file

    save_file(tensors, str(path))
