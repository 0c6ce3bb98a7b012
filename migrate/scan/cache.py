"""Scan cache: results per file, keyed by content hash; (size, mtime) only as a shortcut.

One JSON document per (scan root, tool version, rule pack, selected rules, target): a data
format, so a shared cache folder cannot run code (a pickle could). An entry is reused when
the file's bytes hash to its digest; a warm run may skip reading a file whose size and mtime
both match an entry that has a digest. Anything of the wrong shape starts the cache afresh.
Location: --cache-dir, $MIGRATE_CACHE_DIR, or the user cache folder
($XDG_CACHE_HOME/ascend-migrate). A cache that cannot be written is not an error and
leaves no temporary file behind.

A cache folder may be shared or restored from another CI job, so its content is untrusted
(docs/contracts.md, trust model). Each entry is bound to its file's path, its content hash
and the rule table (rule pack digest, selected codes, target, tool version) by an HMAC
whose key never lives in the cache folder: ``$MIGRATE_CACHE_KEY`` (a CI secret shared by
the jobs that share a cache) or a per-user key file made on first use
(``$XDG_CONFIG_HOME/ascend-migrate/cache.key``, mode 0600). An entry whose MAC does not
check, or whose findings name another path, an unknown rule or offsets outside the file, is
ignored: the file is scanned afresh. Without a usable key there is no cache. And apply never
splices cached edits: it re-derives the fixes of every file it rewrites from the bytes it
reads (fix/run.py), so even a cache written with a leaked key cannot put text in a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from migrate import __version__
from migrate.core.cache_files import (
    KEY_ENV,
    cache_key,
    default_cache_dir,
    ignored,
    mac_of,
    read_cache_doc,
    write_cache_file,
)
from migrate.core.fileio import MAX_FILE_BYTES, content_hash
from migrate.core.findings import CATEGORIES, Edit, Finding, Fix
from migrate.core.rules import Rule, rule_pack_digest

__all__ = [
    "KEY_ENV",
    "Entry",
    "ScanCache",
    "cache_key",
    "content_hash",
    "default_cache_dir",
    "mac_of",
    "write_cache_file",
]
FORMAT = 4


@dataclass
class Entry:
    size: int
    mtime_ns: int
    digest: str
    findings: list[Finding]
    error: str | None

    def to_data(self) -> dict:
        return {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "digest": self.digest,
            "error": self.error,
            "findings": [_finding_data(f) for f in self.findings],
        }

    @classmethod
    def from_data(cls, d: dict) -> Entry:
        size, mtime, digest, error = d["size"], d["mtime_ns"], d["digest"], d["error"]
        if not (
            isinstance(size, int)
            and isinstance(mtime, int)
            and isinstance(digest, str)
            and (error is None or isinstance(error, str))
        ):
            raise TypeError("bad entry")
        return cls(size, mtime, digest, [_finding(x) for x in d["findings"]], error)


def _finding_data(f: Finding) -> dict:
    d = {k: getattr(f, k) for k in _FIELDS}
    if f.fix is not None:
        d["fix"] = {
            "applicability": f.fix.applicability,
            "description": f.fix.description,
            "imports": list(f.fix.imports),
            "edits": [[e.start, e.end, e.content] for e in f.fix.edits],
            "ranges": [list(r) for r in f.fix.ranges],
        }
    return d


# Every Finding field but the fix, from the dataclass itself: a new field is cached too.
_FIELDS = tuple(f.name for f in dataclasses.fields(Finding) if f.name != "fix")
_STRINGS = ("rule", "name", "path", "message", "category", "snippet")


def _finding(d: dict) -> Finding:
    values = {k: d[k] for k in _FIELDS if k in d}
    fix = d.get("fix")
    if fix is not None:
        edits = [Edit(_int(s), _int(e), str(c)) for s, e, c in fix["edits"]]
        ranges = [_range(r) for r in fix.get("ranges") or ()]
        if fix["applicability"] not in ("safe", "unsafe") or any(e.start > e.end for e in edits):
            raise TypeError("bad fix")
        fix = Fix(
            fix["applicability"], str(fix["description"]), edits, [str(i) for i in fix["imports"]], ranges
        )
    f = Finding(**values, fix=fix)
    ints = (f.line, f.column, f.end_line, f.end_column, f.snippet_start)
    if (
        not all(isinstance(v, int) for v in ints)
        or not all(isinstance(getattr(f, k), str) for k in _STRINGS)
        or f.category not in CATEGORIES
    ):
        raise TypeError("bad finding")
    return f


def _range(r) -> tuple[int, int, int, int]:
    a, b, c, e = (_int(x) for x in r)
    return a, b, c, e


def _int(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("bad offset")
    return value


def _plausible(rel: str, entry: Entry, rules: dict[str, Rule] | None) -> bool:
    """Findings of a cached entry that could be this file's: its path, a selected rule (by
    code and name), positions inside the file (an offset counts characters, never more than
    the file's bytes)."""
    for f in entry.findings:
        rule = rules.get(f.rule) if rules is not None else None
        if f.path != rel or (rules is not None and (rule is None or rule.name != f.name)):
            return False
        if not (1 <= f.line <= f.end_line and f.column >= 1 and f.end_column >= 1):
            return False
        if f.fix and any(e.end > entry.size for e in f.fix.edits):
            return False
    return True


@dataclass
class ScanCache:
    path: Path | None
    entries: dict[str, Entry] = field(default_factory=dict)
    dirty: bool = False
    key: bytes = b""
    binding: bytes = b""  # the rule table and the scan root every entry's MAC covers
    # read but not yet checked (load): rel -> the entry's data, and the selected rules
    unchecked: dict[str, dict] = field(default_factory=dict, repr=False)
    rules: dict[str, Rule] | None = field(default=None, repr=False)

    @classmethod
    def open(
        cls, cache_dir: Path | None, root: Path, codes: list[str], rules: Sequence[Rule] | None = None
    ) -> ScanCache:
        """The cache of one scan; ``codes`` name the selection (rules and target), ``rules``
        the selected rules cached findings must come from."""
        return cls.load(cache_dir, root, codes, rules).bind("")

    @classmethod
    def load(
        cls, cache_dir: Path | None, root: Path, codes: list[str], rules: Sequence[Rule] | None = None
    ) -> ScanCache:
        """The cache file of one scan, read but not trusted yet: ``bind(context)`` checks
        its entries against what the scan found around the files (the project context, part
        of every entry's MAC); until then ``seen`` only hints which files it may hold."""
        if cache_dir is None:
            return cls(None)
        secret = cache_key()
        if secret is None:
            return cls(None)
        name = hashlib.blake2b(digest_size=12)
        binding = hashlib.blake2b(digest_size=32)
        for part in (__version__, rule_pack_digest(), os.path.realpath(root), ",".join(codes)):
            for h in (name, binding):
                h.update(part.encode("utf-8", "surrogateescape"))
                h.update(b"\0")
        path = Path(cache_dir) / f"scan-{name.hexdigest()}.json"
        cache = cls(path, key=secret, binding=binding.digest())
        cache.rules = {r.code: r for r in rules} if rules is not None else None
        cache.unchecked = _load(path)
        return cache

    def seen(self, rel: str, st: os.stat_result | None) -> bool:
        """A hint before ``bind``: does the file hold an entry for ``rel`` (checked or not)
        with the file's size and mtime?"""
        raw = self.unchecked.get(rel) or {}
        return bool(st and raw.get("size") == st.st_size and raw.get("mtime_ns") == st.st_mtime_ns)

    def bind(self, context: str) -> ScanCache:
        """Check the loaded entries for a scan whose project context is ``context``: an entry
        made in another context (or forged) does not check, and its file is scanned again."""
        if self.path is None:
            return self
        binding = hashlib.blake2b(self.binding, digest_size=32)
        binding.update(context.encode("utf-8", "surrogateescape"))
        self.binding = binding.digest()
        self.entries = _checked(self.unchecked, self)
        self.unchecked = {}
        return self

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
        entries = {}
        for rel, e in self.entries.items():
            data = e.to_data()
            entries[rel] = {**data, "mac": mac_of(self.key, self.binding, rel, data)}
        doc = {"format": FORMAT, "entries": entries}
        write_cache_file(self.path, json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode())


def _load(path: Path) -> dict[str, dict]:
    """The cache file's entries as read (rel -> data with its MAC), unchecked; none when the
    file is missing, of another format or corrupt (core/cache_files.py: read_cache_doc)."""
    doc = read_cache_doc(path, FORMAT, MAX_FILE_BYTES * 8)
    if doc is None:
        return {}
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        ignored(path, "no entries object")
        return {}
    return {rel: raw for rel, raw in entries.items() if isinstance(rel, str) and isinstance(raw, dict)}


def _checked(unchecked: dict[str, dict], cache: ScanCache) -> dict[str, Entry]:
    """The entries whose MAC checks under the cache's binding and that are plausible."""
    out = {}
    for rel, raw in unchecked.items():
        try:
            raw = dict(raw)
            mac = raw.pop("mac")
            if not (
                isinstance(mac, str) and hmac.compare_digest(mac, mac_of(cache.key, cache.binding, rel, raw))
            ):
                continue  # not written by this user (or its key): scan the file afresh
            entry = Entry.from_data(raw)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            continue
        if _plausible(rel, entry, cache.rules):
            out[rel] = entry
    return out
