"""Scan cache: results per file, keyed by (size, mtime) and a content hash.

One pickle per (scan root, tool version, rule pack, selected rules). A warm run of an
unchanged tree only stats files. Location: --cache-dir, $MIGRATE_CACHE_DIR, or the user
cache folder ($XDG_CACHE_HOME/ascend-migrate).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from migrate import __version__
from migrate.core.rules import rule_pack_digest


def default_cache_dir() -> Path:
    env = os.environ.get("MIGRATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ascend-migrate"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class Entry:
    size: int
    mtime_ns: int
    digest: str
    findings: list  # list[Finding]
    error: str | None


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
        for part in (__version__, rule_pack_digest(), str(root.resolve()), ",".join(codes)):
            key.update(part.encode())
            key.update(b"\0")
        path = cache_dir / f"scan-{key.hexdigest()}.pickle"
        try:
            with open(path, "rb") as fh:
                entries = pickle.load(fh)
            if not isinstance(entries, dict):
                entries = {}
        except Exception:  # missing, corrupt or from another version: start afresh
            entries = {}
        return cls(path, entries)

    def lookup(self, rel: str, st: os.stat_result) -> Entry | None:
        e = self.entries.get(rel)
        if e and e.size == st.st_size and e.mtime_ns == st.st_mtime_ns:
            return e
        return None

    def lookup_digest(self, rel: str, digest: str) -> Entry | None:
        e = self.entries.get(rel)
        return e if e and e.digest == digest else None

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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".scan-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(self.entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written is not an error
