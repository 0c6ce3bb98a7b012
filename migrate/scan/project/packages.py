"""Which package a Python file belongs to: its top package folder and dotted module
name, from the ``__init__.py`` files above it (remembered per scan).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from migrate.core import reads


def package_of(
    path: Path, known: dict | None = None, root: Path | None = None
) -> tuple[Path | None, str | None]:
    """(top package folder, dotted module name) of a Python file, or (None, None) for a
    file outside any package (no ``__init__.py`` beside it). ``known`` remembers what each
    folder is across the calls of one scan; ``root``: the scanned tree, inside which a
    package below namespace folders of another is that one's subpackage."""
    known = {} if known is None else known
    name = os.fspath(path)
    folder = os.path.dirname(name)
    if not _is_package(folder, known):
        return None, None
    chain = _chain(folder, known)
    if chain is not None and root is not None:
        chain = _through_namespace(chain, known, os.path.abspath(root))
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


_MAX_NAMESPACE = 4  # folders without __init__.py between a package and its subpackage


def _through_namespace(
    chain: tuple[str, tuple[str, ...]], known: dict, root: str
) -> tuple[str, tuple[str, ...]]:
    """``chain`` carried on up where its top folder lies in namespace folders (no
    ``__init__.py``, PEP 420) of another package: captum/testing/helpers/ is the package
    ``captum.testing.helpers``, not ``helpers`` (its files import it so, and a helper
    imported as ``helpers._device`` is not found)."""
    key = ("namespace", chain[0])
    if key not in known:
        known[key] = _namespace_prefix(chain[0], known, root)
    above = known[key]
    return chain if above is None else (above[0], (*above[1], *chain[1]))


def _namespace_prefix(top: str, known: dict, root: str) -> tuple[str, tuple[str, ...]] | None:
    """(the package folder above, the names down to ``top``'s parent) where ``top`` lies
    in namespace folders of another package inside ``root``, else None (folders above the
    scanned tree are not read: they are not the project's)."""
    names: list[str] = []
    cur = os.path.dirname(top)
    for _ in range(_MAX_NAMESPACE):
        name, parent = os.path.basename(cur), os.path.dirname(cur)
        if not name.isidentifier() or parent == cur or not _inside(parent, root):
            return None
        names.append(name)
        if _is_package(parent, known):
            above = _chain(parent, known)
            return None if above is None else (above[0], (*above[1], *reversed(names)))
        cur = parent
    return None


def _inside(folder: str, root: str) -> bool:
    return os.path.abspath(folder) == root or os.path.abspath(folder).startswith(root.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=256)
def _top_path(top: str) -> Path:
    return Path(top)


def _relative_to(path: Path, top: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(top)).as_posix()
    except ValueError:
        return ""
