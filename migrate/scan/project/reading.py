"""How discovery reads a package: its Python files (at most ``MAX_PACKAGE_FILES``) and
their bytes (regular files only, not through a symlink, at most ``MAX_READ`` bytes each);
nothing read is executed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from migrate.core import reads
from migrate.core.fileio import SourceError, read_bytes

MAX_PACKAGE_FILES = 5000


MAX_READ = 1024 * 1024


def _package_files(top: Path) -> list[str]:
    """The package's Python files (in its sub-packages, not in plain folders), as strings:
    at most ``MAX_PACKAGE_FILES``. (Noted as read: worker processes may read them.)"""
    out: list[str] = []
    for folder, dirs, files in os.walk(top, followlinks=False):
        reads.folder(folder)
        for d in dirs:
            reads.folder(os.path.join(folder, d))  # a package when it holds an __init__.py
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d != "__pycache__"
            and os.path.isfile(os.path.join(folder, d, "__init__.py"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                if len(out) >= MAX_PACKAGE_FILES:
                    return out
                out.append(os.path.join(folder, name))
                reads.file(out[-1])
    return out


def _bytes_of(name: str, data: bytes | None) -> bytes | None:
    """The bytes discovery reads of ``name``: ``data`` if the caller read them and discovery
    would read them too (a regular file, not a symlink, of at most MAX_READ bytes)."""
    if data is None:
        return _read(name)
    return data if len(data) <= MAX_READ and _readable(name) else None


def _read(path: Path | str) -> bytes | None:
    """A regular file's bytes (not through a symlink), None past ``MAX_READ``."""
    try:
        if not _readable(path):
            return None
        return read_bytes(path, MAX_READ)[0]  # (a buffered read(MAX_READ) cost 4x more)
    except (OSError, SourceError):
        return None


def _readable(path: Path | str) -> bool:
    """A regular file (not a symlink) of at most ``MAX_READ`` bytes."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_READ
