"""Read a dump directory: a checked manifest plus lazily opened safetensors shards.

Every problem with a dump - no manifest, bad JSON, a record missing a field, a tensor file
that is gone or whose bytes no longer match the recorded CRC32 - is a UsageError (exit 2)
naming the dump and the record, never a traceback.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError

FORMAT = 1
_FIELDS = {"name": str, "call": int, "kind": str, "index": int, "dtype": str, "shape": list}


def rank_dirs(path: Path) -> dict[int, Path]:
    """``{rank: folder}`` of a distributed dump's parent folder (``rank0/``, ``rank1/``...)."""
    out = {}
    if path.is_dir() and not (path / "manifest.json").is_file():
        for child in path.iterdir():
            num = child.name.removeprefix("rank")
            if child.name.startswith("rank") and num.isdigit() and \
                    (child / "manifest.json").is_file():
                out[int(num)] = child
    return dict(sorted(out.items()))


def _check_records(where: Path, records: Any) -> list[dict]:
    if not isinstance(records, list):
        raise UsageError(f"{where}: 'records' must be a list")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise UsageError(f"{where}: records[{i}] is not an object")
        for key, typ in _FIELDS.items():
            value = rec.get(key)
            if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
                raise UsageError(f"{where}: records[{i}].{key} must be {typ.__name__}, "
                                 f"got {value!r}")
        if rec.get("stats") is not None and not isinstance(rec["stats"], dict):
            raise UsageError(f"{where}: records[{i}].stats must be an object")
    return records


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
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise UsageError(f"{manifest}: unsupported dump format {got!r}")
        meta, specs = doc.get("meta", {}), doc.get("input_specs", {})
        if not isinstance(meta, dict) or not isinstance(specs, dict):
            raise UsageError(f"{manifest}: 'meta' and 'input_specs' must be objects")
        self.meta: dict = meta
        self.records: list[dict] = _check_records(manifest, doc.get("records", []))
        self.input_specs: dict = specs
        self._handles: dict[str, Any] = {}

    @property
    def has_tensors(self) -> bool:
        return not self.meta.get("stats_only", False)

    def tensor(self, rec: dict) -> Any | None:
        """The stored tensor of a record (checked against its CRC32), or None."""
        key, file = rec.get("tensor"), rec.get("file")
        if key is None or file is None:
            return None
        if not isinstance(key, str) or not isinstance(file, str) or "/" in file:
            raise UsageError(f"{self.path}: record {_label(rec)} has a bad tensor reference")
        handle = self._open(file)
        try:
            t = handle.get_tensor(key)
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise UsageError(f"{self.path / file}: cannot read {key} for {_label(rec)}: "
                             f"{exc}") from None
        crc = rec.get("crc32")
        if crc is not None and f"{_crc(t):08x}" != crc:
            raise UsageError(f"{self.path / file}: {key} ({_label(rec)}) does not match its "
                             "checksum: the dump is corrupt")
        return _restore(t, rec)

    def stored(self, rec: dict) -> Any:
        """The stored tensor of a record that must have one (a stats-only record: an error)."""
        t = self.tensor(rec)
        if t is None:
            raise UsageError(f"{self.path}: record {_label(rec)} holds no tensor (a stats-only "
                             "dump cannot be replayed)")
        return t

    def _open(self, file: str) -> Any:
        handle = self._handles.get(file)
        if handle is None:
            # One shard mapped at a time: records mostly come in file order, and a mapping
            # of every shard would keep the whole dump resident.
            self._handles.clear()
            from safetensors import safe_open

            try:
                handle = safe_open(str(self.path / file), framework="pt", device="cpu")
            except Exception as exc:  # noqa: BLE001 - safetensors raises its own error type
                raise UsageError(f"{self.path / file}: cannot open tensor file: {exc}") \
                    from None
            self._handles[file] = handle
        return handle

    def close(self) -> None:
        self._handles.clear()


def _label(rec: dict) -> str:
    return f"{rec.get('name')}#{rec.get('call')} {rec.get('kind')}[{rec.get('index')}]"


def _crc(t: Any) -> int:
    import torch

    flat = t.contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    return zlib.crc32(memoryview(flat.view(torch.uint8).numpy())) if flat.numel() else 0


def _restore(t: Any, rec: dict) -> Any:
    """complex128 is stored as its float64 real view (shards.storable)."""
    import torch

    if rec.get("dtype") == "complex128" and t.dtype == torch.float64:
        return torch.view_as_complex(t.contiguous())
    return t
