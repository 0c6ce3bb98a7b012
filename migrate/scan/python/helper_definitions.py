"""The port's one-function helpers written into a script (a file outside a package, or one
handed over alone): where they go (after the imports, before their first use), spaced as a
formatter spaces top-level functions, and the imports they need."""

from __future__ import annotations

import ast
import re

from migrate.core import device_helpers
from migrate.core.fileio import newline_of
from migrate.core.findings import Edit
from migrate.scan.python.device_names import DeviceNames
from migrate.scan.python.device_scope import _after_imports
from migrate.scan.python.unspellable import Unspellable

__all__ = ["definitions_edit"]


def definitions_edit(
    devices: DeviceNames, names: set[str], first_use: int | None = None
) -> tuple[Edit, list[str]] | None:
    """The insertion that defines the port's helpers ``names`` in ``devices``' (script) file,
    after its imports (before the statement holding ``first_use``, the first call, if
    that comes earlier), spaced as a formatter spaces top-level functions; and the
    imports it needs (``import torch``, placed with the file's imports)."""
    names = {n for n in names if n not in devices.own}
    if not names:
        return None
    code = device_helpers.definitions(sorted(names), devices.torch)
    imports = ["import torch"] if devices.f.bindings.local_for("torch") is None else []
    text = devices.f.text
    pos = _after_imports(devices.f.tree, devices.f.index, text)
    if first_use is not None and first_use < pos:
        stmt = next((n for n in devices.f.tree.body if devices.f.span(n)[1] > first_use), None)
        if stmt is None or isinstance(stmt, (ast.Import, ast.ImportFrom)):
            raise Unspellable("the helper would be used before it can be defined")
        pos = devices.f.index.starts[stmt.lineno - 1]
    nl = newline_of(text)
    blank = re.match(r"(?:[ \t]*\r?\n)*", text[pos:])
    following = len(blank.group().splitlines()) if blank else 0
    lead = "" if pos == 0 else nl * 2
    if pos == len(text) and text and not text.endswith("\n"):
        lead = nl * 3
    tail = nl * max(0, 2 - following) if pos < len(text) else ""
    return Edit(pos, pos, lead + code.replace("\n", nl) + tail), imports
