"""Shared pieces for fixers: binding call arguments, spelling names, inserting helpers.

A helper (a function or class a fix needs) is written into the user's file, readable and
next to the code, never imported from us. Every fix that needs it inserts the *same*
text at the *same* place (before the first top-level def/class, or before the statement
using it if that comes first), so the applier merges the insertions; once the helper
exists, fixes just call it.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from migrate.core.findings import Edit
from migrate.scan.python.fixers import FixContext


@lru_cache(maxsize=8)
def module_tree(text: str) -> ast.Module:
    return ast.parse(text)


def bind_args(call: ast.Call, params: list[str]) -> dict[str, ast.expr] | None:
    """Map a call's arguments to parameter names; None for *args/**kwargs or unknown names."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(params):
        return None
    bound = dict(zip(params, call.args, strict=False))
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params or kw.arg in bound:
            return None
        bound[kw.arg] = kw.value
    return bound


def is_const(node: ast.expr | None, *values) -> bool:
    return isinstance(node, ast.Constant) and any(
        node.value is v or (type(node.value) is type(v) and node.value == v) for v in values
    )


def spell(ctx: FixContext, qualname: str) -> tuple[str, list[str]]:
    """How to write ``qualname`` in this file, and the imports that spelling needs."""
    local = ctx.local_name(qualname)
    if local:
        return local, []
    top = qualname.split(".")[0]
    return qualname, [f"import {top}"]


def defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name for n in tree.body)


def _contains(stmt: ast.stmt, node: ast.expr | ast.stmt) -> bool:
    start = (stmt.lineno, stmt.col_offset)
    end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
    return (
        start <= (node.lineno, node.col_offset)
        and (node.end_lineno or node.lineno, node.end_col_offset or 0) <= end
    )


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def _blank_lines_before(lines, line: int) -> int:
    n = 0
    while line - 1 - n >= 1 and not lines.line_text(line - 1 - n).strip():
        n += 1
    return n


def helper_edits(
    ctx: FixContext, helpers: list[tuple[str, str]], uses: list[ast.expr], removal: Edit | None = None
) -> list[Edit]:
    """Edits inserting the (name, code) helpers the module does not define yet, in one
    block with two blank lines around it, plus ``removal`` (an import going away; when it
    ends where the block goes, the two become one edit so no blank lines pile up)."""
    tree = module_tree(ctx.text)
    code = "\n\n".join(c for name, c in helpers if not defines(tree, name))
    extra = [removal] if removal else []
    anchor = next(
        (
            i
            for i, stmt in enumerate(tree.body)
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            or any(_contains(stmt, u) for u in uses)
        ),
        None,
    )
    if not code or anchor is None:
        return extra
    lines = ctx.index
    if anchor == 0:
        pos = lines.starts[_first_line(tree.body[0]) - 1]
        return [Edit(pos, pos, code + "\n\n"), *extra]
    prev_end = tree.body[anchor - 1].end_lineno or tree.body[anchor - 1].lineno
    if prev_end >= len(lines.starts):
        return extra
    start = end = lines.starts[prev_end]
    if removal is not None and removal.start <= start <= removal.end:
        start, end, extra = removal.start, max(end, removal.end), []
    first_line = lines.position(start)[0]
    next_line = lines.position(end)[0]
    lead = "\n" * max(0, 2 - _blank_lines_before(lines, first_line))
    after = 0
    while next_line + after <= len(lines.starts) and not lines.line_text(next_line + after).strip():
        after += 1
    return [Edit(start, end, lead + code + "\n" * max(0, 2 - after)), *extra]


def enclosing_statement(tree: ast.Module, node: ast.expr | ast.stmt) -> tuple[ast.stmt, list] | None:
    """The innermost statement containing ``node`` and the body list it sits in."""
    best = None
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(parent, field, None)
            if not isinstance(body, list):
                continue
            for stmt in body:
                if isinstance(stmt, ast.stmt) and _contains(stmt, node):
                    if best is None or _contains(best[0], stmt):
                        best = (stmt, body)
    return best


def _container(tree: ast.Module, stmt: ast.stmt) -> list | None:
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(parent, field, None)
            if isinstance(body, list) and any(s is stmt for s in body):
                return body
        for handler in getattr(parent, "handlers", []):
            if any(s is stmt for s in handler.body):
                return handler.body
    return None


def import_group(ctx: FixContext, handles) -> tuple[Edit, list[tuple[ast.Call, str]]] | None:
    """For ``from M import a, b`` binding the matched name: if every name it binds is used
    only as the callee of calls that ``handles(qualname, call)`` accepts, return the edit
    removing the import and all those (call, qualname) uses; else None.

    A fix then rewrites every use and drops the import at once (each use's fix is the
    same edit set, so the applier merges them). Leaving ``from flash_attn import ...``
    behind would fail where the package is missing, or switch a `try:` guarded path off.
    """
    tree = module_tree(ctx.text)
    callee_of = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
            continue
        quals = {a.asname or a.name: f"{stmt.module}.{a.name}" for a in stmt.names}
        if ctx.qualname not in quals.values() or "*" in quals:
            continue
        uses: list[tuple[ast.Call, str]] = []
        for local, qual in quals.items():
            found = [n for n in names if n.id == local]
            if not found or any(
                id(n) not in callee_of
                or not isinstance(n.ctx, ast.Load)
                or not handles(qual, callee_of[id(n)])
                for n in found
            ):
                return None
            uses.extend((callee_of[id(n)], qual) for n in found)
        edit = remove_statement(ctx, tree, stmt)
        return (edit, sorted(uses, key=lambda u: (u[0].lineno, u[0].col_offset))) if edit else None
    return None


def remove_statement(ctx: FixContext, tree: ast.Module, stmt: ast.stmt) -> Edit | None:
    body = _container(tree, stmt)
    start, end = ctx.span(stmt)
    lines = ctx.index
    if body is None:
        return None
    if len(body) == 1:
        return Edit(start, end, "pass")
    first = lines.starts[stmt.lineno - 1]
    last = stmt.end_lineno or stmt.lineno
    nxt = lines.starts[last] if last < len(lines.starts) else len(ctx.text)
    tail = ctx.text[end:nxt].strip()
    if ctx.text[first:start].strip() or (tail and not tail.startswith("#")):
        return None  # shares its line with other code (`;`)
    after = last + 1
    if body[0] is stmt and after < len(lines.starts) and not lines.line_text(after).strip():
        nxt = lines.starts[after]  # no blank line left at the top of the block
    return Edit(first, nxt, "")
