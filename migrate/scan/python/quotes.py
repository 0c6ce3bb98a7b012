"""The quote a file writes its strings with, so a rewrite reads like the code around it.

Counted over the file's one-line string literals that hold no quote character (docstrings
and strings that need one quote to avoid escaping the other say nothing about a habit):
the more common of ``'`` and ``"`` wins, ``"`` on a tie (what ruff and black write).

``lexed_quote`` counts the same literals from the lexer's string tokens (inert.py): no tree
walk. Strings joined by implicit concatenation are one literal (skipped, as the constant's
source holds quotes), f-strings count the strings inside their fields. It answers None
when the lexer is unsure; then ``dominant_quote`` counts the tree's constants.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from migrate.scan.python.inert import Inert

_PREFIX = re.compile(r"[rRbBuU]*(['\"])")


def dominant_quote(text: str, constants: Iterable[ast.Constant], span) -> str:
    """``'`` or ``"``: the quote most of the file's plain string literals use, from its
    ``ast.Constant`` nodes. ``span`` maps a node to its (start, end) offsets in ``text``."""
    single = double = 0
    for node in constants:
        if not isinstance(node.value, (str, bytes)):
            continue
        if getattr(node, "end_lineno", None) != getattr(node, "lineno", None):
            continue
        start, end = span(node)
        source = text[start:end]
        m = _PREFIX.match(source)
        if m is None or source[m.end() - 1 : m.end() + 2] in ("'''", '"""'):
            continue
        body = source[m.end() : -1]
        if "'" in body or '"' in body:
            continue
        if m.group(1) == "'":
            single += 1
        else:
            double += 1
    return "'" if single > double else '"'


_COMMENT = re.compile(rb"#[^\r\n]*")
_CONTINUED = re.compile(rb"\\(?:\r\n|\n|\r)")


def lexed_quote(data: bytes) -> str | None:
    """``dominant_quote`` of the file ``data`` from its string tokens (None: lexer unsure)."""
    lexer = Inert(data).lex()
    if lexer.unsure:
        return None
    counts = {b"'": 0, b'"': 0}
    groups: list[list[tuple[int, int, int]]] = []
    for start, quote, end, depth in lexer.strings:
        if groups and _joined(data[groups[-1][-1][2] : start], depth):
            groups[-1].append((start, quote, end))
        else:
            groups.append([(start, quote, end)])
    for group in groups:
        for start, quote, end in group:
            prefix = data[start:quote].lower()
            if b"f" in prefix or b"t" in prefix:
                width = 3 if data[quote : quote + 3] in (b'"""', b"'''") else 1
                for literal in _field_strings(data[quote + width : end - width]):
                    _count(literal, counts)
            elif len(group) == 1:
                _count(data[quote:end], counts)
    return "'" if counts[b"'"] > counts[b'"'] else '"'


def _joined(gap: bytes, depth: int) -> bool:
    """Does only implicit concatenation lie between two strings (blanks, and inside
    brackets also line breaks and comments; outside them, backslash continuations)?"""
    if depth > 0:
        return not _COMMENT.sub(b"", gap).strip(b" \t\f\r\n\\")
    return not _CONTINUED.sub(b"", gap).strip(b" \t\f")


def _count(literal: bytes, counts: dict[bytes, int]) -> None:
    """Count a one-line literal (quote first, no prefix) that holds no quote character."""
    if b"\n" in literal or b"\r" in literal or literal[:3] in (b'"""', b"'''"):
        return
    body = literal[1:-1]
    if b"'" not in body and b'"' not in body:
        counts[literal[:1]] += 1


def _field_strings(body: bytes) -> list[bytes]:
    """The string literals inside an f-string's replacement fields."""
    out = []
    depth = i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if depth == 0 and c in (123, 125) and body[i + 1 : i + 2] == body[i : i + 1]:
            i += 2  # {{ or }}: a literal brace
            continue
        if c == 123:
            depth += 1
        elif c == 125:
            depth = max(0, depth - 1)
        elif depth and c in (34, 39):
            end = body.find(body[i : i + 1], i + 1)
            if end == -1:
                break
            out.append(body[i : end + 1])
            i = end + 1
            continue
        i += 1
    return out
