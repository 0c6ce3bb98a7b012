"""A folder without ``__init__.py`` inside a package (PEP 420 namespace folder:
``pkg/sub/run.py`` beside ``pkg/__init__.py``) is part of that package where its code says so:
the file, or a file beside it, imports the package relatively or by name. Its port imports
the package's helper the way those files import the package (relatively where most of them
do), never pasting a helper block. A file also run by path (a ``__main__`` block importing a
module beside it by bare name) stays a script.
"""

from __future__ import annotations

import os
from pathlib import Path

from migrate.scan.project.facts import _import_heads, _runs_alone
from migrate.scan.project.packages import _is_package, package_of
from migrate.scan.project.reading import _read

_MAX_DEPTH = 4  # namespace folders between the file and its package
_MAX_SIBLINGS = 50  # files beside it read for how they import the package


def namespace_module(path: Path, known: dict) -> tuple[Path, str, bool] | None:
    """(top package folder, dotted module name, imports relatively) of a file in a namespace
    folder of a package, where it or a file beside it imports the package; else None."""
    names: list[str] = []
    cur = path.parent
    for _ in range(_MAX_DEPTH):
        if not cur.name.isidentifier() or cur.parent == cur:
            return None
        names.append(cur.name)
        if _is_package(os.fspath(cur.parent), known):
            break
        cur = cur.parent
    else:
        return None
    top, base = package_of(cur.parent / "__init__.py", known)
    if top is None or not base or not path.stem.isidentifier():
        return None
    style = _import_style(path, top.name)
    if style is None:
        return None
    return top, ".".join([base, *reversed(names), path.stem]), style


def _import_style(path: Path, top_name: str) -> bool | None:
    """Whether the file's folder imports the package relatively (True) or by name (False),
    as most of its imports of it do; None where neither the file nor a file beside it
    imports it, or the file is run by path."""
    data = _read(path)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    heads = _import_heads(text)
    if _runs_alone(os.fspath(path), text, frozenset(heads) - {".", top_name}):
        return None
    relative, absolute = heads.count("."), heads.count(top_name)
    if not relative and not absolute:
        siblings = sorted(p for p in path.parent.glob("*.py") if p != path)[:_MAX_SIBLINGS]
        for sibling in siblings:
            more = _read(sibling)
            if more is not None:
                found = _import_heads(more.decode("utf-8", "replace"))
                relative, absolute = relative + found.count("."), absolute + found.count(top_name)
    if not relative and not absolute:
        return None
    return relative > absolute
