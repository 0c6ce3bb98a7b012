"""Which package a Python file belongs to: its top package folder and dotted module
name, from the ``__init__.py`` files above it (remembered per scan).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from migrate.core import reads


def package_of(path: Path, known: dict | None = None) -> tuple[Path | None, str | None]:
    """(top package folder, dotted module name) of a Python file, or (None, None) for a
    file outside any package (no ``__init__.py`` beside it). ``known`` remembers what each
    folder is across the calls of one scan."""
    known = {} if known is None else known
    name = os.fspath(path)
    folder = os.path.dirname(name)
    if not _is_package(folder, known):
        return None, None
    chain = _chain(folder, known)
    stem = os.path.splitext(os.path.basename(name))[0]
    parts = (chain[1] if chain else ()) + (() if stem == "__init__" else (stem,))
    if not all(p.isidentifier() for p in parts):
        return None, None
    return _top_path(chain[0] if chain else folder), ".".join(parts)


def _is_package(folder: str, known: dict) -> bool:
    key = ("init", folder)
    found = known.get(key)
    if found is None:
        reads.folder(folder)
        found = known[key] = os.path.isfile(os.path.join(folder, "__init__.py"))
    return found


def _chain(folder: str, known: dict) -> tuple[str, tuple[str, ...]] | None:
    """(top folder, names from the top down) of the package folders from ``folder`` up,
    or None when ``folder`` does not start one (not a package, or a nameless folder).
    Iterative: a tree may be nested deeper than the recursion limit."""
    pending: list[tuple[str, str]] = []  # (folder, its name), innermost first
    found: tuple[str, tuple[str, ...]] | None = None
    while True:
        key = ("chain", folder)
        if key in known:
            found = known[key]
            break
        name, parent = os.path.basename(folder), os.path.dirname(folder)
        if name in ("", ".") or parent == folder or not _is_package(folder, known):
            known[key] = None
            break
        pending.append((folder, name))
        folder = parent
    for folder, name in reversed(pending):
        found = (found[0], (*found[1], name)) if found else (folder, (name,))
        known[("chain", folder)] = found
    return found


@functools.lru_cache(maxsize=256)
def _top_path(top: str) -> Path:
    return Path(top)


def _relative_to(path: Path, top: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(top)).as_posix()
    except ValueError:
        return ""
