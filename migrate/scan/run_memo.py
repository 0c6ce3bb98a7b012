"""A finished `migrate scan`, remembered: the same command on the same files writes the same
report again without starting the scan.

A warm scan (every file in the scan cache) spends most of its time starting up: the command
line library, the rule table, the walk, the project context. When nothing the last run
depended on changed, its report is known. `replay(argv)` runs first, with the standard
library only, and answers from the memo; `Recording` makes the memo at the end of a run.

Key (SHA-256): the arguments, the working folder, the environment (a few volatile shell
variables aside), whether stdout and stderr are terminals (and their size), the
interpreter, each site-packages folder's mtime (installing or removing a package changes
it), and the tool itself (size and mtime of every file of the package and its data).

Entry (one JSON file per key in the cache folder, beside the scan cache (scan/cache.py) and
the package facts (scan/project_cache.py), HMAC'd with the cache key and read by the same
rules as every cache file: migrate/core/cache_files.py): the report's bytes, where they went (stdout or
the ``-o`` file), the exit status, and what the run depended on (noted where it reads:
migrate/core/reads.py): every folder it listed or looked into for a name (a file added,
removed or renamed changes the folder's mtime) and every file it or its workers read, each
with its size, mtime, ctime, inode and type, stat'ed after the run. An entry is replayed
only when its MAC checks and every dependency stats the same.

A run is remembered only when: it ended with exit 0 or 1; a cache folder is in use (not
``--no-cache``); it scanned no ONNX model (its external data is read beside it); and no
dependency changed within ``RACY_NS`` of its start (a timestamp that coarse cannot prove
the file unchanged; this also keeps out a run whose report lands in a folder it scans).
Reads are bounded; nothing here is ever an error: any doubt runs the scan (a corrupt memo
with a note on stderr).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from migrate.core import reads
from migrate.core.cache_files import (
    cache_key,
    default_cache_dir,
    ignored,
    mac_of,
    read_cache_doc,
    write_cache_file,
)

FORMAT = 1
RACY_NS = 2_000_000_000
MAX_ENTRY_BYTES = 64 * 1024 * 1024
MAX_ENTRIES = 16  # memo files kept per cache folder (the oldest go)
MAX_DEPS = 200_000  # a run that read more files and folders is not remembered
# Shell variables that change between two identical commands without changing a report.
_VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "PS1", "PS2", "PROMPT_COMMAND", "HISTFILE"})
_PREFIX = "run-"

entry_argv: list[str] | None = None  # the console script's arguments (set by migrate.__main__)


def replay(argv: list[str]) -> int | None:
    """Write the remembered report of ``migrate <argv>`` and return its exit status; None
    when there is none, or any doubt (then the command runs)."""
    try:
        if not argv or argv[0] != "scan" or "--no-cache" in argv:
            return None
        key = cache_key()
        if key is None:
            return None
        path = _memo_path(_cache_dir(argv), _key_of(argv))
        doc = _read(path, key)
        if doc is None or not _unchanged(doc["deps"]):
            return None
        data = doc["report"].encode("utf-8", "surrogateescape")
        output = doc["output"]
        if output is None:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            from migrate.core.outputs import write_output

            write_output(output, data)
        return int(doc["code"])
    except Exception:  # noqa: BLE001 - a memo that cannot be replayed is simply not used
        return None


class Recording:
    """What a scan run reads (migrate/core/reads.py), from ``start`` to ``finish``."""

    def __init__(self, argv: list[str], cache_dir: Path):
        self.argv = argv
        self.cache_dir = os.path.abspath(cache_dir)
        self.start_ns = time.time_ns()

    @classmethod
    def start(cls, cache_dir: Path | None) -> Recording | None:
        """A recording of this run if it came through the console script with a cache."""
        if entry_argv is None or cache_dir is None:
            return None
        reads.start()
        return cls(entry_argv, cache_dir)

    def finish(
        self, report: bytes, output: Path | None, code: int, folders: Iterable[str | os.PathLike], skip: bool
    ) -> None:
        """Remember the run: its report, where it went (None: stdout), its exit status;
        ``folders``: where it looked for names beside what it read (its config's)."""
        files, listed = reads.stop()
        if skip or code not in (0, 1):
            return
        try:
            self._save(report, output, code, files, {*listed, *map(os.path.abspath, folders)})
        except Exception:  # noqa: BLE001 - a memo that cannot be made is not an error
            pass

    def _save(
        self, report: bytes, output: Path | None, code: int, files: set[str], folders: set[str]
    ) -> None:
        key = cache_key()
        if key is None:
            return
        deps: list[list] = []
        racy = self.start_ns - RACY_NS
        if len(files) + len(folders) > MAX_DEPS:
            return  # stat'ing it all on every replay would cost what the memo saves
        for dep in sorted(files | folders):
            if _under(dep, self.cache_dir):
                continue
            sig = _signature(dep)
            if sig is not None and max(sig[1], sig[2]) >= racy:
                return  # changed while the run read it, or too recently to tell
            deps.append([dep, sig])
        doc = {
            "format": FORMAT,
            "report": report.decode("utf-8", "surrogateescape"),
            "output": None if output is None else os.fspath(output),
            "code": code,
            "deps": deps,
        }
        path = _memo_path(Path(self.cache_dir), _key_of(self.argv))
        body = {**doc, "mac": mac_of(key, b"run", path.name, doc)}
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
        if len(payload) <= MAX_ENTRY_BYTES:
            write_cache_file(path, payload)
            _prune(path.parent)


def _signature(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    size = -1 if stat.S_ISDIR(st.st_mode) else st.st_size
    return [size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, stat.S_IFMT(st.st_mode)]


def _unchanged(deps: list) -> bool:
    for path, sig in deps:
        if _signature(path) != sig:
            return False
    return True


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _cache_dir(argv: list[str]) -> Path:
    """The cache folder the command names (its last --cache-dir), else the default."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--cache-dir" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--cache-dir="):
            found = arg.split("=", 1)[1]
    return Path(found) if found else default_cache_dir()


def _memo_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / f"{_PREFIX}{key}.json"


def _read(path: Path, key: bytes) -> dict | None:
    """The memo at ``path`` if it is this format's (core/cache_files.py: read_cache_doc),
    its MAC checks and it has the memo's shape."""
    doc = read_cache_doc(path, FORMAT, MAX_ENTRY_BYTES)
    if doc is None:
        return None
    mac = doc.pop("mac", None)
    if not isinstance(mac, str) or not hmac.compare_digest(mac, mac_of(key, b"run", path.name, doc)):
        return None  # written under another key (or forged): not ours to believe
    ok = (
        isinstance(doc.get("report"), str)
        and (doc.get("output") is None or isinstance(doc["output"], str))
        and doc.get("code") in (0, 1)
        and isinstance(doc.get("deps"), list)
        and all(_dep_ok(d) for d in doc["deps"])
    )
    if not ok:
        ignored(path, "not a run memo")
    return doc if ok else None


def _dep_ok(dep) -> bool:
    return (
        isinstance(dep, list)
        and len(dep) == 2
        and isinstance(dep[0], str)
        and (dep[1] is None or (isinstance(dep[1], list) and all(isinstance(v, int) for v in dep[1])))
    )


def _prune(folder: Path) -> None:
    """Keep the newest ``MAX_ENTRIES`` memo files."""
    try:
        memos = sorted(
            (e.stat().st_mtime_ns, e.path)
            for e in os.scandir(folder)
            if e.name.startswith(_PREFIX) and e.name.endswith(".json")
        )
        for _, path in memos[:-MAX_ENTRIES]:
            os.unlink(path)
    except OSError:
        pass


def _key_of(argv: list[str]) -> str:
    h = hashlib.sha256()

    def part(value: object) -> None:
        h.update(repr(value).encode("utf-8", "surrogateescape"))
        h.update(b"\0")

    part(FORMAT)
    part(argv)
    part(os.getcwd())
    part(sorted((k, v) for k, v in os.environ.items() if k not in _VOLATILE_ENV))
    part((sys.executable, sys.version, sys.flags))
    for fd in (1, 2):
        tty = os.isatty(fd)
        part((fd, tty, os.get_terminal_size(fd) if tty else None))
    for folder in sys.path:  # where packages are installed: its mtime moves with each install
        if folder.endswith(("site-packages", "dist-packages")):
            part((folder, _signature(folder)))
    for sig in _tool_files():
        part(sig)
    return h.hexdigest()[:40]


def _tool_files() -> Iterable[tuple[str, int, int]]:
    """Every file of the tool: the package (with its data in a wheel) and, in a source
    checkout, the rule and op tables beside it."""
    package = Path(__file__).resolve().parents[1]
    roots = [package, *(package.parent / name for name in ("rules", "op_registry"))]
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                yield (os.path.join(folder, name), st.st_size, st.st_mtime_ns)
