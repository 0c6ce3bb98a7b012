"""The libraries' NPU checks a package's modules import at top level (trl's modules:
``from transformers import is_torch_npu_available``): a file of the package that has no
check of its own is ported with the one its package already uses, imported the same way,
instead of a helper module the port adds (migrate/scan/python/npu_checks.py
``package_check``). The checks are the table's (rules/npu_checks.yaml, library_checks.py).
"""

from __future__ import annotations

import re
from collections import Counter

from migrate.scan.library_checks import npu_checks

# a top-level ``from <module> import <names>`` (one line, or a parenthesised list): an
# import inside a function, a ``try:`` or an ``if`` is not one every importer runs
_FROM = re.compile(r"^from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)", re.MULTILINE)
_COMMENT = re.compile(r"#[^\n]*")

# (module, check name, how many of the package's files import it there)
Ranked = tuple[tuple[str, str, int], ...]


def imported_checks(text: str) -> tuple[tuple[str, str], ...]:
    """(module, name) of each table check the module ``text`` imports at top level from the
    module the table names for it (``from transformers import is_torch_npu_available``)."""
    table = npu_checks()
    if not any(name in text for name in set(table.values())):
        return ()  # most files: one substring test each
    out: list[tuple[str, str]] = []
    for m in _FROM.finditer(text):
        module = m.group(1)
        name = table.get(module)
        if name is None or (module, name) in out:
            continue
        if re.search(rf"(?<![\w.]){name}\b", _COMMENT.sub("", m.group(2))):
            out.append((module, name))
    return tuple(out)


def ranked(per_file: list[tuple[tuple[str, str], ...]], package: str) -> Ranked:
    """The checks the package's files import (``imported_checks`` of each), the most
    imported first, a tie by module name: never one of the package's own (a module of it
    imported by another may be circular: its importer is still running)."""
    counts = Counter(pair for pairs in per_file for pair in pairs)
    kept = [(m, n, c) for (m, n), c in counts.items() if m.split(".")[0] != package]
    return tuple(sorted(kept, key=lambda t: (-t[2], t[0], t[1])))


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)
_NAME = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)


def ranked_data(checks: Ranked) -> list[list]:
    return [[m, n, c] for m, n, c in checks]


def ranked_from_data(data) -> Ranked | None:
    """The ranked checks read back from the cache; None where the data has not their shape
    (a cache written before packages' checks were gathered has none: its facts are found
    again, not read as "no checks")."""
    if not isinstance(data, list):
        return None
    out = []
    for row in data:
        if not (isinstance(row, list) and len(row) == 3):
            return None
        module, name, count = row
        if not (isinstance(module, str) and _DOTTED.match(module) and isinstance(name, str)):
            return None
        if not (_NAME.match(name) and type(count) is int and count > 0):
            return None
        out.append((module, name, count))
    return tuple(out)
