"""The quote a file writes its strings with, so a rewrite reads like the code around it.

Counted over the file's one-line string literals that hold no quote character (docstrings
and strings that need one quote to avoid escaping the other say nothing about a habit):
the more common of ``'`` and ``"`` wins, ``"`` on a tie (what ruff and black write).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

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
