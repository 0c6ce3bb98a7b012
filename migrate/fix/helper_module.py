"""The device helper module a portable port adds to a package that has none of its own.

Rewritten files import ``get_device_type`` & co. from ``<package>/_device.py``
(migrate/scan/project/own_module.py decides where); once `apply` has rewritten a
package's files, the module is created if one of them imports from it and it does not exist yet, with the
helpers they import and what those call (migrate/core/device_helpers/template.py), as an
engineer adds the one function a port needs; before any of them is written
(fix/transaction.py). It is created exclusively and whole (a synced temporary file linked
into place), without following a symlink, inside the scanned tree. A second run finds it
as the package's own helper; where that run's files import a helper it lacks, the helper is
added at its end (only to a module of the port's own helpers, never through a link).
"""

from __future__ import annotations

import ast
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path

from migrate.core import device_helpers, fileio
from migrate.core.import_names import resolved_module
from migrate.fix.rewrite import Outcome


def needed(outcomes: Sequence[Outcome], project) -> dict[str, tuple[Path, str, tuple | None, list[str]]]:
    """add_path -> (path, module, type_from, names) for every helper module a rewritten file
    now imports: the helper names imported from it (the module may exist: create() adds
    what it lacks)."""
    out: dict[str, tuple[Path, str, tuple | None, list[str]]] = {}
    if project is None:
        return out
    for o in outcomes:
        if not o.changed or not o.rel.endswith(".py"):
            continue
        fd = project.for_file(o.rel)
        if not fd.add_module or not fd.add_path:
            continue
        names = [
            n
            for n in _imported_from(o.new_text, fd.add_module, fd.module, o.rel)
            if n in device_helpers.KINDS
        ]
        if not names:
            continue
        path = project.root / fd.add_path
        known = out.get(fd.add_path)
        have = known[3] if known else []
        out[fd.add_path] = (path, fd.add_module, fd.type_from, [*have, *(n for n in names if n not in have)])
    return out


def _imported_from(text: str, module: str, here: str | None, rel: str) -> list[str]:
    """The names ``text`` imports from ``module`` in any spelling: relative or absolute, on
    one line or wrapped in parentheses (``from pkg._device import (`` and a name a line)."""
    if module.rpartition(".")[2] not in text:
        return []  # no import of it: the file is not parsed again
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and resolved_module(node, here or "", rel.endswith("__init__.py")) == module
        for a in node.names
    ]


def create(
    path: Path, rel: str, write: bool, type_from: tuple | None = None, names: list[str] | None = None
) -> Outcome | None:
    """The outcome of adding the helper module at ``path`` with the helpers ``names``
    (written when ``write``); ``type_from``: the project's type helper it imports instead of
    defining one. Where the module exists: the helpers it lacks added at its end (None when
    it has them all, or is not the port's own module)."""
    if os.path.lexists(path):
        return _extend(path, rel, write, names or [])
    text = device_helpers.module_text(type_from, names)
    out = Outcome(path, rel, old_text="", new_text=text, created=True)
    if not write:
        return out
    try:
        if os.path.islink(path.parent) or not path.parent.is_dir():
            raise OSError("its folder is not a plain folder")
        _publish(path, text)
        out.written = True
    except OSError as exc:
        out.error = f"not written: {exc.strerror or exc}"
    return out


def _publish(path: Path, text: str) -> None:
    """Put ``text`` at ``path`` all at once: written and synced under a temporary name, then
    linked (never over an existing file) into place, so an interrupted run leaves the
    whole module or none of it."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.migrate-tmp")  # a killed run's stays
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path, follow_symlinks=False)  # fails if the name exists, as O_EXCL
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links
            if os.path.lexists(path):
                raise FileExistsError(17, "File exists") from None
            os.rename(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _extend(path: Path, rel: str, write: bool, names: list[str]) -> Outcome | None:
    """The port's own helper module at ``path`` with the helpers of ``names`` it lacks
    appended, or None."""
    if os.path.islink(path) or not path.is_file():
        return None
    try:
        old = path.read_text(encoding="utf-8")
        tree = ast.parse(old)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs or not all(device_helpers.recognise(n) for n in defs):
        return None  # not (only) the port's helpers: a person's module is never edited
    bound = {n.name for n in defs} | {
        a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    missing = [n for n in device_helpers.needed_names(names) if n not in bound]
    if not missing:
        return None
    code = device_helpers.definitions(missing, callees=False)
    new = old.rstrip("\n") + "\n\n\n" + code
    if "torch." in code and not re.search(r"^import torch$", old, re.MULTILINE):
        return None  # cannot happen for a module the port wrote (it defines get_device_type)
    out = Outcome(path, rel, old_text=old, new_text=new)
    if not write:
        return out
    try:  # atomically, keeping the module's mode, owner and group (core/fileio.py)
        note = fileio.atomic_write(path, new.encode("utf-8"))
        out.written = True
        out.warnings = [note] if note else []
    except (OSError, fileio.SourceError) as exc:
        out.error = f"not written: {getattr(exc, 'strerror', None) or exc}"
    return out
