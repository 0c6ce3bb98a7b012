"""Read a dump directory: manifest records plus lazily opened safetensors shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError

FORMAT = 1


class Dump:
    """One dump directory. Tensors are read one at a time through ``safe_open``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        manifest = self.path / "manifest.json"
        if not manifest.is_file():
            raise UsageError(f"{self.path}: not a dump directory (no manifest.json)")
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{manifest}: unreadable manifest: {exc}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise UsageError(f"{manifest}: unsupported dump format {doc.get('format')!r}")
        self.meta: dict = doc.get("meta", {})
        self.records: list[dict] = doc.get("records", [])
        self.input_specs: dict = doc.get("input_specs", {})
        self._handles: dict[str, Any] = {}

    @property
    def has_tensors(self) -> bool:
        return not self.meta.get("stats_only", False)

    def tensor(self, rec: dict) -> Any | None:
        """The stored tensor of a record, or None in stats-only dumps."""
        key, file = rec.get("tensor"), rec.get("file")
        if key is None or file is None:
            return None
        handle = self._handles.get(file)
        if handle is None:
            # Keep one shard mapped at a time: records mostly come in file order, and a
            # mapping of every shard would keep the whole dump resident.
            self._handles.clear()
            from safetensors import safe_open

            try:
                handle = safe_open(str(self.path / file), framework="pt", device="cpu")
            except (OSError, Exception) as exc:  # safetensors raises its own error type
                raise UsageError(f"{self.path / file}: cannot open tensor file: {exc}") from None
            self._handles[file] = handle
        return handle.get_tensor(key)

    def close(self) -> None:
        self._handles.clear()

    def by_key(self) -> dict[tuple, dict]:
        return {(r["name"], r["call"], r["kind"], r["index"]): r for r in self.records}
