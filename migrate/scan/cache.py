"""Scan cache: results per file, keyed by content hash; (size, mtime) only as a shortcut.

One JSON document per (scan root, tool version, rule pack, selected rules): a data format,
so a shared cache folder cannot run code (a pickle could). An entry is reused when the
file's bytes hash to its digest; a warm run may skip reading a file whose size and mtime
both match an entry that has a digest. Anything of the wrong shape starts the cache afresh.
Location: --cache-dir, $MIGRATE_CACHE_DIR, or the user cache folder
($XDG_CACHE_HOME/ascend-migrate). A cache that cannot be written is not an error and
leaves no temporary file behind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from migrate import __version__
from migrate.core.fileio import MAX_FILE_BYTES, SourceError, content_hash, read_bytes
from migrate.core.findings import Edit, Finding, Fix
from migrate.core.rules import rule_pack_digest

__all__ = ["Entry", "ScanCache", "content_hash", "default_cache_dir"]
FORMAT = 2


def default_cache_dir() -> Path:
    env = os.environ.get("MIGRATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ascend-migrate"


@dataclass
class Entry:
    size: int
    mtime_ns: int
    digest: str
    findings: list[Finding]
    error: str | None

    def to_data(self) -> dict:
        return {"size": self.size, "mtime_ns": self.mtime_ns, "digest": self.digest,
                "error": self.error, "findings": [_finding_data(f) for f in self.findings]}

    @classmethod
    def from_data(cls, d: dict) -> Entry:
        size, mtime, digest, error = d["size"], d["mtime_ns"], d["digest"], d["error"]
        if not (isinstance(size, int) and isinstance(mtime, int) and isinstance(digest, str)
                and (error is None or isinstance(error, str))):
            raise TypeError("bad entry")
        return cls(size, mtime, digest, [_finding(x) for x in d["findings"]], error)


def _finding_data(f: Finding) -> dict:
    d = {k: getattr(f, k) for k in _FIELDS}
    if f.fix is not None:
        d["fix"] = {"applicability": f.fix.applicability, "description": f.fix.description,
                    "imports": list(f.fix.imports),
                    "edits": [[e.start, e.end, e.content] for e in f.fix.edits],
                    "ranges": [list(r) for r in f.fix.ranges]}
    return d


# Every Finding field but the fix, from the dataclass itself: a new field is cached too.
_FIELDS = tuple(f.name for f in dataclasses.fields(Finding) if f.name != "fix")
_STRINGS = ("rule", "name", "path", "message", "category", "snippet")


def _finding(d: dict) -> Finding:
    values = {k: d[k] for k in _FIELDS if k in d}
    fix = d.get("fix")
    if fix is not None:
        edits = [Edit(int(s), int(e), str(c)) for s, e, c in fix["edits"]]
        ranges = [(int(a), int(b), int(c), int(e)) for a, b, c, e in fix.get("ranges") or ()]
        fix = Fix(str(fix["applicability"]), str(fix["description"]), edits,  # type: ignore[arg-type]
                  [str(i) for i in fix["imports"]], ranges)
    f = Finding(**values, fix=fix)
    ints = (f.line, f.column, f.end_line, f.end_column, f.snippet_start)
    if not all(isinstance(v, int) for v in ints) or not all(
            isinstance(getattr(f, k), str) for k in _STRINGS):
        raise TypeError("bad finding")
    return f


@dataclass
class ScanCache:
    path: Path | None
    entries: dict[str, Entry] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def open(cls, cache_dir: Path | None, root: Path, codes: list[str]) -> ScanCache:
        if cache_dir is None:
            return cls(None)
        key = hashlib.blake2b(digest_size=12)
        for part in (__version__, rule_pack_digest(), os.path.realpath(root), ",".join(codes)):
            key.update(part.encode("utf-8", "surrogateescape"))
            key.update(b"\0")
        path = Path(cache_dir) / f"scan-{key.hexdigest()}.json"
        return cls(path, _load(path))

    def lookup(self, rel: str, st: os.stat_result | None) -> Entry | None:
        """The entry for ``rel`` if size and mtime match and it has a content hash."""
        e = self.entries.get(rel)
        if st and e and e.digest and e.size == st.st_size and e.mtime_ns == st.st_mtime_ns:
            return e
        return None

    def store(self, rel: str, entry: Entry) -> None:
        self.entries[rel] = entry
        self.dirty = True

    def save(self, keep: set[str]) -> None:
        if self.path is None:
            return
        stale = set(self.entries) - keep
        if not self.dirty and not stale:
            return
        for rel in stale:
            del self.entries[rel]
        doc = {"format": FORMAT, "entries": {k: e.to_data() for k, e in self.entries.items()}}
        data = json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".scan-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
            tmp = None
        except OSError:
            pass  # a cache that cannot be written is not an error
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _load(path: Path) -> dict[str, Entry]:
    try:
        data, _ = read_bytes(path, MAX_FILE_BYTES * 8)
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return {}
        return {str(k): Entry.from_data(v) for k, v in doc["entries"].items()}
    except (SourceError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return {}  # missing, corrupt or from another version: start afresh
