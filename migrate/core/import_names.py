"""A name added to an import statement the file already has, in the statement's own shape.

``from M import a, b`` on one line, a parenthesised list with one name a line (black, ruff
format), or one wrapped as yapf wraps it (several a line, aligned with the parenthesis): the
name goes where isort would put it when the names are sorted (ruff's I001 keeps them so),
else after the last one, as an engineer adds it.
"""

from __future__ import annotations

import ast
import re

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, LineIndex


def isort_key(name: str) -> tuple[int, str, str]:
    """isort's order within one ``from`` import (ruff's default, order-by-type): CONSTANTS,
    then Classes, then everything else, each case-insensitively."""
    rank = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return rank, name.lower(), name


def name_added(text: str, index: LineIndex, node: ast.ImportFrom, name: str) -> Edit | None:
    """The edit adding ``name`` to ``node`` (a ``from`` import of ``text``); None where it
    binds it already, imports ``*``, or is written in a shape not handled (a backslash, a
    semicolon, an alias list split without parentheses)."""
    aliases = node.names
    if any(a.name == "*" for a in aliases) or any((a.asname or a.name) == name for a in aliases):
        return None
    start, end = index.span(node)
    statement = text[start:end]
    if "\\" in statement or ";" in statement:
        return None
    if "(" not in statement and node.lineno != node.end_lineno:
        return None
    spans = [index.span(a) for a in aliases]
    return entry_added(
        text,
        index,
        Entries(spans, [a.name for a in aliases], [a.lineno for a in aliases], node.lineno),
        name,
        name,
    )


class Entries:
    """The entries of a list written in the source: an import's names, ``__all__``'s strings."""

    def __init__(self, spans: list[tuple[int, int]], keys: list[str], lines: list[int], head: int):
        self.spans, self.keys, self.lines, self.head = spans, keys, lines, head


PEP8_LIMIT = 79  # a line beside others grows no longer than this (or the list's longest)


def entry_added(
    text: str, index: LineIndex, entries: Entries, entry: str, key: str, keep_trailing: bool = False
) -> Edit | None:
    """The edit adding ``entry`` (sorted by ``key``) to ``entries``: where isort would put it
    when they are sorted, else after the last one; a line of its own where they are one a
    line below the statement's first line (with a trailing comma, as black writes an import
    it splits; ``keep_trailing``: only where the last entry has one), else beside them; None
    where that would make a wrapped list's line longer than PEP 8's 79 columns or its own
    longest line (yapf-wrapped imports: a formatter would rewrap the whole statement)."""
    keys = entries.keys
    ordered = keys == sorted(keys, key=isort_key)
    later = next((i for i, n in enumerate(keys) if isort_key(n) > isort_key(key)), None) if ordered else None
    lines, spans = entries.lines, entries.spans
    if len(set(lines)) == len(lines) and lines[0] > entries.head:
        return _one_a_line(text, index, lines, spans, entry, later, keep_trailing)
    at = spans[later][0] if later is not None else spans[-1][1]
    if len(set(lines)) > 1:  # wrapped: the line it joins must still fit
        line = lines[later] if later is not None else lines[-1]
        widths = [len(_line_at(text, index, n)) for n in range(entries.head, lines[-1] + 1)]
        if len(_line_at(text, index, line)) + len(entry) + 2 > max(PEP8_LIMIT, *widths):
            return None
    return Edit(at, at, f"{entry}, " if later is not None else f", {entry}")


def _line_at(text: str, index: LineIndex, line: int) -> str:
    start = index.offset(line, 0)
    end = text.find("\n", start)
    return text[start : len(text) if end < 0 else end].rstrip("\r")


def _one_a_line(
    text: str, index: LineIndex, lines: list[int], spans, entry: str, later: int | None, keep_trailing: bool
) -> Edit:
    """A list with an entry a line: a line of its own, indented as they are."""
    nl = newline_of(text)
    if later is not None:
        at = index.offset(lines[later], 0)
        indent = text[at : spans[later][0]]
        return Edit(at, at, f"{indent}{entry},{nl}")
    last_start, last_end = spans[-1]
    indent = text[index.offset(lines[-1], 0) : last_start]
    comma = re.match(r"[ \t]*,", text[last_end:])
    if comma is None:
        return Edit(last_end, last_end, f",{nl}{indent}{entry}" + ("" if keep_trailing else ","))
    line_end = text.find("\n", last_end + comma.end())
    line_end = len(text) if line_end < 0 else line_end
    if text[line_end - 1 : line_end] == "\r":
        line_end -= 1
    return Edit(line_end, line_end, f"{nl}{indent}{entry},")


def resolved_module(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The absolute module ``node`` imports from, in the dotted ``module`` (``is_package``:
    a package's ``__init__.py``); None for a relative one reaching above the top package."""
    if not node.level:
        return node.module
    parts = module.split(".") if module else []
    package = parts if is_package else parts[:-1]
    if node.level > len(package):
        return None
    base = [*package[: len(package) - node.level + 1], *(node.module.split(".") if node.module else [])]
    return ".".join(base)
