"""The device helper module a portable port adds to a package that has none of its own.

Rewritten files import ``get_device_type`` & co. from ``<package>/_device.py``
(migrate/scan/project.py decides where); once `apply` has rewritten a package's files, the
module is created if one of them imports from it and it does not exist yet. It is created,
never overwritten: exclusively, without following a symlink, inside the scanned tree, with
the template's text (migrate/core/device_helpers/template.py). A second run finds it as the
package's own helper and changes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from migrate.core import device_helpers
from migrate.fix.rewrite import Outcome

_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(.+)$", re.MULTILINE)


def needed(outcomes: list[Outcome], project) -> dict[str, tuple[Path, str, tuple | None]]:
    """add_path -> (path, module, type_from) for every helper module a rewritten file now
    imports and that does not exist yet."""
    out: dict[str, tuple[Path, str, tuple | None]] = {}
    if project is None:
        return out
    for o in outcomes:
        if not o.changed or not o.rel.endswith(".py"):
            continue
        fd = project.for_file(o.rel)
        if not fd.add_module or not fd.add_path or fd.add_path in out:
            continue
        path = project.root / fd.add_path
        if os.path.lexists(path):
            continue
        if any(
            _absolute(m.group(1), fd.module, o.rel) == fd.add_module
            for m in _IMPORT.finditer(o.new_text)
            if any(n in m.group(2) for n in device_helpers.NAMES.values())
        ):
            out[fd.add_path] = (path, fd.add_module, fd.type_from)
    return out


def _absolute(module: str, here: str | None, rel: str) -> str:
    if not module.startswith("."):
        return module
    level = len(module) - len(module.lstrip("."))
    parts = (here or "").split(".")
    if not rel.endswith("__init__.py"):
        parts = parts[:-1]
    base = parts[: len(parts) - level + 1] if level > 1 else parts
    rest = module.lstrip(".")
    return ".".join([*base, rest] if rest else base)


def create(path: Path, rel: str, write: bool, type_from: tuple | None = None) -> Outcome:
    """The outcome of adding the helper module at ``path`` (written when ``write``);
    ``type_from``: the project's type helper it imports instead of defining one."""
    text = device_helpers.module_text(type_from)
    out = Outcome(path, rel, old_text="", new_text=text, created=True)
    if not write:
        return out
    try:
        if os.path.islink(path.parent) or not path.parent.is_dir():
            raise OSError("its folder is not a plain folder")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        out.written = True
    except OSError as exc:
        out.error = f"not written: {exc.strerror or exc}"
    return out
