"""The package-facts cache: what helper discovery learnt from a package's files, reused
while none of them changed.

Finding a package's device helpers and NPU arms (migrate/scan/project/) reads every file
of the package; a warm scan reuses the answer when the package holds the same files with
the same sizes, mtimes and ctimes (the *signature*). One JSON document per tool version and
configured helper module, one entry per package folder.

The cache folder is untrusted like the scan cache's (migrate/scan/cache.py): each entry is
bound by an HMAC (same key) to the tool version, the rule pack, the package's real path, its
signature and its facts; an entry that does not check is recomputed, and the facts it holds
are validated again by the caller before use. Reads are bounded; writes replace the file
atomically and never fail the scan.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from migrate import __version__
from migrate.core.cache_files import cache_key, ignored, mac_of, read_cache_doc, write_cache_file
from migrate.core.rules import rule_pack_digest

FORMAT = 2
MAX_CACHE_BYTES = 16 * 1024 * 1024


def signature(files: Iterable[str], top: Path) -> str | None:
    """The package's file signature: names (relative to ``top``), sizes, mtimes and ctimes
    of its files (paths under ``top``); None when one cannot be stat'ed (then nothing is
    reused)."""
    h = hashlib.blake2b(digest_size=20)
    skip = len(os.fspath(top))
    for path in files:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        line = f"{path[skip:]}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"
        h.update(line.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


@dataclass
class FactsCache:
    path: Path | None = None  # None: nothing is cached
    key: bytes = b""
    binding: bytes = b""
    entries: dict[str, dict] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def open(cls, cache_dir: Path | None, configured: str | None) -> FactsCache:
        if cache_dir is None:
            return cls()
        secret = cache_key()
        if secret is None:
            return cls()
        binding = hashlib.blake2b(digest_size=32)
        for part in (__version__, rule_pack_digest(), configured or ""):
            binding.update(part.encode("utf-8", "surrogateescape") + b"\0")
        name = binding.hexdigest()[:24]
        cache = cls(Path(cache_dir) / f"project-{name}.json", secret, binding.digest())
        cache.entries = cache._load()
        return cache

    def get(self, top: Path, sig: str | None) -> dict | None:
        """The facts stored for the package folder ``top`` with this signature, MAC checked."""
        entry = self.entries.get(_where(top))
        if sig is None or not isinstance(entry, dict):
            return None
        facts, mac = entry.get("facts"), entry.get("mac")
        if entry.get("signature") != sig or not isinstance(facts, dict) or not isinstance(mac, str):
            return None
        if not hmac.compare_digest(mac, mac_of(self.key, self.binding, _where(top) + "\0" + sig, facts)):
            return None
        return facts

    def put(self, top: Path, sig: str | None, facts: dict) -> None:
        if self.path is None or sig is None:
            return
        where = _where(top)
        mac = mac_of(self.key, self.binding, where + "\0" + sig, facts)
        self.entries[where] = {"signature": sig, "facts": facts, "mac": mac}
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        doc = {"format": FORMAT, "entries": self.entries}
        write_cache_file(self.path, json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode())
        self.dirty = False

    def _load(self) -> dict[str, dict]:
        """The entries of the cache file (core/cache_files.py: read_cache_doc), unchecked."""
        assert self.path is not None
        doc = read_cache_doc(self.path, FORMAT, MAX_CACHE_BYTES)
        if doc is None:
            return {}
        entries = doc.get("entries")
        if not isinstance(entries, dict):
            ignored(self.path, "no entries object")
            return {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}


def _where(top: Path) -> str:
    return os.path.realpath(top)
