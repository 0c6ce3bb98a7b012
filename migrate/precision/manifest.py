"""Read a dump directory: a checked manifest plus lazily opened safetensors shards.

Every problem with a dump - no manifest, bad JSON, a record missing a field, a tensor file
that is gone or whose bytes no longer match the recorded CRC32 - is a UsageError (exit 2)
naming the dump and the record, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import input_path, load_json
from migrate.precision.crc import crc32
from migrate.precision.shards import DTYPES

FORMAT = 1
MAX_MANIFEST_BYTES = 512 * 1024 * 1024
_FIELDS = {"name": str, "call": int, "kind": str, "index": int, "dtype": str, "shape": list}
_LINKS = ("src", "kids", "scope")  # lineage.py: dataflow between records
MAX_LINKS = 256
_STAT_KEYS = ("min", "max", "mean", "norm", "nan", "inf", "std", "absmax")


def rank_dirs(path: Path) -> dict[int, Path]:
    """``{rank: folder}`` of a distributed dump's parent folder (``rank0/``, ``rank1/``...).
    Two folders that name one rank (``rank0/`` and ``rank00/``) are an input error: one of
    them would silently drop out of the comparison; so is a dump folder whose name only
    looks like a rank (``rank²/``, ``rank٣/``, ``rank1a/``: not ``rank`` and ASCII digits)."""
    out: dict[int, Path] = {}
    if path.is_dir() and not (path / "manifest.json").is_file():
        for child in sorted(path.iterdir()):
            num = child.name.removeprefix("rank")
            if not child.name.startswith("rank") or not (child / "manifest.json").is_file():
                continue
            if not (num.isascii() and num.isdigit()):
                raise UsageError(
                    f"{escape(str(path))}: {escape(child.name)}/ holds a dump but is not a rank "
                    "folder (rank and ASCII digits, as rank2/); rename it or move it out"
                )
            rank = int(num)
            if rank in out:
                raise UsageError(
                    f"{escape(str(path))}: {out[rank].name}/ and {child.name}/ are both rank {rank}; keep one"
                )
            out[rank] = child
    return dict(sorted(out.items()))


def dump_files(path: str | Path) -> list[Path]:
    """The files a dump folder (or a parent of per-rank dumps) holds: what an output must
    never overwrite."""
    path = Path(path)
    out: list[Path] = []
    for folder in [path, *sorted(p for p in _children(path) if p.name.startswith("rank"))]:
        out += [p for p in _children(folder) if p.is_file()]
    return out


def _children(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _fail(where: Path, what: str) -> UsageError:
    return UsageError(f"{escape(str(where))}: {what}")


def _check_fields(where: Path, i: int, rec: dict) -> None:
    for key, typ in _FIELDS.items():
        value = rec.get(key)
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            shown = type(value).__name__ if isinstance(value, (dict, list)) else escape(repr(value))[:60]
            raise _fail(where, f"records[{i}].{key} must be {typ.__name__}, got {shown}")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in rec["shape"]):
        raise _fail(where, f"records[{i}].shape must be a list of sizes")
    if rec["call"] < 0 or rec["index"] < 0:
        raise _fail(where, f"records[{i}]: call and index must not be negative")
    for key in ("tensor", "file", "crc32"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise _fail(where, f"records[{i}].{key} must be a string or null")


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _check_stats(where: Path, i: int, rec: dict) -> None:
    stats = rec.get("stats")
    if stats is not None and not isinstance(stats, dict):
        raise _fail(where, f"records[{i}].stats must be an object")
    for key in _STAT_KEYS:
        value = (stats or {}).get(key)
        if value is not None and not _is_number(value):
            raise _fail(where, f"records[{i}].stats.{key} must be a number")
    if stats and stats.get("sketch") is not None and not isinstance(stats["sketch"], str):
        raise _fail(where, f"records[{i}].stats.sketch must be a string")
    for key in ("cond", "xnorm"):
        value = rec.get(key)
        if value is not None and not (_is_number(value) and 0 <= value < float("inf")):
            raise _fail(where, f"records[{i}].{key} must be a non-negative number")


def _check_links(where: Path, i: int, rec: dict) -> None:
    for key in _LINKS:
        links = rec.get(key)
        if links is not None and not (
            isinstance(links, list)
            and len(links) <= MAX_LINKS
            and all(isinstance(x, int) and not isinstance(x, bool) and -1 <= x < i for x in links)
        ):
            raise _fail(where, f"records[{i}].{key} must be a list of earlier record positions")
    tied = rec.get("tied")
    if tied is not None and not (
        isinstance(tied, list)
        and len(tied) <= MAX_LINKS
        and all(isinstance(x, str) and 0 < len(x) <= 1000 for x in tied)
    ):
        raise _fail(where, f"records[{i}].tied must be a list of parameter names")


def _check_records(where: Path, records: Any) -> list[dict]:
    if not isinstance(records, list):
        raise _fail(where, "'records' must be a list")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise _fail(where, f"records[{i}] is not an object")
        _check_fields(where, i, rec)
        _check_stats(where, i, rec)
        _check_links(where, i, rec)
    seen: dict[tuple, int] = {}
    for i, rec in enumerate(records):  # a repeated key would shadow a record in alignment
        ident = (rec["name"], rec["call"], rec["kind"], rec["index"])
        if ident in seen:
            raise _fail(
                where,
                f"records[{i}] repeats records[{seen[ident]}] ({_label(rec)}): each record is one tensor",
            )
        seen[ident] = i
    return records


def _check_meta(where: Path, meta: dict) -> None:
    """The meta keys readers use: weights {name: {dtype, shape, crc, norm, sketch}},
    modules [names], precision {...}."""
    weights = meta.get("weights")
    if weights is not None:
        if not isinstance(weights, dict):
            raise _fail(where, "meta.weights must be an object")
        for name, row in weights.items():
            shape = row.get("shape", []) if isinstance(row, dict) else None
            if (
                not isinstance(row, dict)
                or not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
            ):
                raise _fail(where, f"meta.weights[{escape(repr(name))[:60]}] must be an object with a shape")
            norm = row.get("norm")
            if norm is not None and (isinstance(norm, bool) or not isinstance(norm, (int, float))):
                raise _fail(where, f"meta.weights[{escape(repr(name))[:60]}].norm must be a number")
            for key in ("dtype", "crc", "sketch"):
                if row.get(key) is not None and not isinstance(row[key], str):
                    raise _fail(where, f"meta.weights[{escape(repr(name))[:60]}].{key} must be a string")
    modules = meta.get("modules")
    if modules is not None and not (isinstance(modules, list) and all(isinstance(m, str) for m in modules)):
        raise _fail(where, "meta.modules must be a list of names")
    for key in ("precision",):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise _fail(where, f"meta.{key} must be an object")


class Dump:
    """One dump directory. Tensors are read one at a time through ``safe_open``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        manifest = self.path / "manifest.json"
        if not manifest.exists():
            raise UsageError(f"{escape(str(self.path))}: not a dump directory (no manifest.json)")
        doc = load_json(manifest, "manifest", MAX_MANIFEST_BYTES)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise _fail(manifest, f"unsupported dump format {escape(repr(got))[:40]}")
        meta, specs = doc.get("meta", {}), doc.get("input_specs", {})
        if not isinstance(meta, dict) or not isinstance(specs, dict):
            raise _fail(manifest, "'meta' and 'input_specs' must be objects")
        _check_meta(manifest, meta)
        self.meta: dict = meta
        self.records: list[dict] = _check_records(manifest, doc.get("records", []))
        self.input_specs: dict = specs
        self._handles: dict[str, Any] = {}
        self._shards: dict[str, Any] = {}

    @property
    def has_tensors(self) -> bool:
        return not self.meta.get("stats_only", False)

    def tensor(self, rec: dict) -> Any | None:
        """The stored tensor of a record (checked against its CRC32), or None."""
        key, file = rec.get("tensor"), rec.get("file")
        if key is None or file is None:
            return None
        self._check_reference(rec, key, file)
        handle = self._open(file)
        try:
            t = handle.get_tensor(key)
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise _fail(
                self.path / file, f"cannot read {escape(key)[:80]} for {_label(rec)}: {_short(exc)}"
            ) from None
        shape = list(t.shape) if rec.get("dtype") != "complex128" else list(rec["shape"])
        stored = DTYPES.get(str(t.dtype).removeprefix("torch."), str(t.dtype))
        self._check_stored(rec, file, key, shape, lambda: _crc(t), stored)
        return _restore(t, rec)

    def array(self, rec: dict) -> Any | None:
        """The stored tensor of a record as a numpy array, without torch (arrays.py), with
        the checks of ``tensor``: a regular file, the record's shape, its CRC32; bfloat16
        and float8 widened to float32."""
        key, file = rec.get("tensor"), rec.get("file")
        if key is None or file is None:
            return None
        self._check_reference(rec, key, file)
        from migrate.precision import arrays

        shard = self._shards.get(file)
        if shard is None:
            if len(self._shards) >= 4:
                self._shards.clear()
            path = input_path(self.path / file, "tensor file")  # a regular file: never a FIFO
            shard = self._shards[file] = arrays.Shard(path)
        data, dtype = shard.raw(key)
        a = arrays.decode(data, dtype, shard.header[key]["shape"])
        if rec.get("dtype") == "complex128" and a.dtype == "<f8" and a.shape[-1:] == (2,):
            a = a.view("<c16")[..., 0]  # stored as its float64 real view (_restore)
        self._check_stored(rec, file, key, list(a.shape), lambda: arrays.crc32(data), dtype)
        return a

    def _check_stored(
        self, rec: dict, file: str, key: str, shape: list, crc: Callable[[], int], stored: str
    ) -> None:
        """A tensor read for ``rec`` has the record's dtype (``stored``: its safetensors
        dtype), shape and CRC32 (when it has one)."""
        want_dtype = "F64" if rec["dtype"] == "complex128" else DTYPES.get(rec["dtype"])
        if stored != want_dtype:
            raise _fail(
                self.path / file,
                f"{escape(key)[:80]} ({_label(rec)}) is stored as {escape(stored)[:20]}, its record "
                f"says dtype {escape(rec['dtype'])[:40]}: the dump is inconsistent",
            )
        if shape != list(rec["shape"]):
            raise _fail(
                self.path / file,
                f"{escape(key)[:80]} ({_label(rec)}) has shape {shape}, its record says {rec['shape']}",
            )
        want = rec.get("crc32")
        if want is not None and f"{crc():08x}" != want:
            raise _fail(
                self.path / file,
                f"{escape(key)[:80]} ({_label(rec)}) does not match its checksum: the dump is corrupt",
            )

    def _check_reference(self, rec: dict, key: Any, file: Any) -> None:
        if (
            not isinstance(key, str)
            or not isinstance(file, str)
            or "/" in file
            or "\x00" in file
            or file in ("", ".", "..")
        ):
            raise _fail(self.path, f"record {_label(rec)} has a bad tensor reference")

    def stored(self, rec: dict) -> Any:
        """The stored tensor of a record that must have one (a stats-only record: an error)."""
        t = self.tensor(rec)
        if t is None:
            raise UsageError(
                f"{self.path}: record {_label(rec)} holds no tensor (a stats-only dump cannot be replayed)"
            )
        return t

    def _open(self, file: str) -> Any:
        handle = self._handles.get(file)
        if handle is None:
            # One shard mapped at a time: records mostly come in file order, and a mapping
            # of every shard would keep the whole dump resident.
            self._handles.clear()
            from safetensors import safe_open

            input_path(self.path / file, "tensor file")  # a regular file: never a FIFO
            try:
                handle = safe_open(str(self.path / file), framework="pt", device="cpu")
            except Exception as exc:  # noqa: BLE001 - safetensors raises its own error type
                raise _fail(self.path / file, f"cannot open tensor file: {_short(exc)}") from None
            self._handles[file] = handle
        return handle

    def close(self) -> None:
        self._handles.clear()
        self._shards.clear()


def _label(rec: dict) -> str:
    return escape(f"{rec.get('name')}#{rec.get('call')} {rec.get('kind')}[{rec.get('index')}]")[:160]


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return escape(text[0] if text else type(exc).__name__)[:200]


def _crc(t: Any) -> int:
    import torch

    flat = t.contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    return crc32(flat.view(torch.uint8).numpy()) if flat.numel() else 0


def _restore(t: Any, rec: dict) -> Any:
    """complex128 is stored as its float64 real view (shards.storable)."""
    import torch

    if rec.get("dtype") == "complex128" and t.dtype == torch.float64:
        return torch.view_as_complex(t.contiguous())
    return t
