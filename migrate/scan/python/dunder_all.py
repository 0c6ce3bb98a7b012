"""A name listed in a module's ``__all__`` beside a sibling, in the list's own layout.

The family rule (kinds/check_family.py) lists the NPU member where the module (or a package
re-exporting it) lists its anchor: in ``__all__ = [...]``, ``__all__: list[str] = [...]``,
``__all__ += [...]`` or ``__all__.extend([...])``, whichever literal names the anchor; on
its line or a line of its own as the entries are written, a trailing comma only where the
file writes one, and a one-element tuple's comma (``("is_cuda_available",)``) dropped once
it holds two.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from migrate.core.findings import Edit
from migrate.core.import_names import Entries, entry_added

_ALL = "__all__"
_COMMA = re.compile(r"[ \t]*,")


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == _ALL


def all_literals(body: list[ast.stmt]) -> Iterator[ast.List | ast.Tuple]:
    """The non-empty list and tuple literals a module's top-level statements make
    ``__all__`` of: assigned (annotated too), added (``+=``) or extended with, in order."""
    for stmt in body:
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and any(_is_all(t) for t in stmt.targets):
            value = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and _is_all(stmt.target):
            value = stmt.value
        elif isinstance(stmt, ast.AugAssign) and _is_all(stmt.target) and isinstance(stmt.op, ast.Add):
            value = stmt.value
        elif isinstance(stmt, ast.Expr) and _extends(stmt.value):
            value = stmt.value.args[0]  # type: ignore[attr-defined]
        if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
            yield value


def _extends(call: ast.expr) -> bool:
    """``__all__.extend(<one argument>)``."""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "extend"
        and _is_all(call.func.value)
        and len(call.args) == 1
        and not call.keywords
    )


def listed(f, sibling: str, name: str) -> list[Edit]:
    """The edits listing ``name`` in the module's ``__all__`` beside ``sibling``: in the
    first literal of strings only that names it; none where one names ``name`` already."""
    found = None
    for value in all_literals(f.tree.body):
        words = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if name in words:
            return []
        if found is None and len(words) == len(value.elts) and sibling in words:
            found = value
    if found is None:
        return []
    spans = [f.span(e) for e in found.elts]
    words = [str(e.value) for e in found.elts if isinstance(e, ast.Constant)]
    quote = f.text[spans[0][1] - 1]  # a prefix (u"...") is not the quote
    entries = Entries(spans, words, [e.lineno for e in found.elts], found.lineno)
    edit = entry_added(f.text, f.index, entries, f"{quote}{name}{quote}", name, keep_trailing=True)
    if edit is None:
        return []
    return _lone_comma_dropped(f, found, spans, edit)


def _lone_comma_dropped(f, value: ast.List | ast.Tuple, spans, edit: Edit) -> list[Edit]:
    """``edit`` with a one-line one-element tuple's comma dropped (it made the tuple; with
    two entries it is a trailing comma the line did not have): ``("a", "b")``."""
    if not (isinstance(value, ast.Tuple) and len(value.elts) == 1 and value.lineno == value.end_lineno):
        return [edit]
    end = spans[0][1]
    comma = _COMMA.match(f.text, end)
    if comma is None:
        return [edit]
    if edit.start == end:
        return [Edit(end, comma.end(), edit.content)]
    return [edit, Edit(end, comma.end(), "")]
