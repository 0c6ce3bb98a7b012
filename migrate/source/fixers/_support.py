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

from migrate.findings import Edit
from migrate.source.fixers import FixContext


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
        node.value is v or (type(node.value) is type(v) and node.value == v) for v in values)


def spell(ctx: FixContext, qualname: str) -> tuple[str, list[str]]:
    """How to write ``qualname`` in this file, and the imports that spelling needs."""
    local = ctx.local_name(qualname)
    if local:
        return local, []
    top = qualname.split(".")[0]
    return qualname, [f"import {top}"]


def defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name
               for n in tree.body)


def _contains(stmt: ast.stmt, node: ast.AST) -> bool:
    start = (stmt.lineno, stmt.col_offset)
    end = (stmt.end_lineno, stmt.end_col_offset)
    return start <= (node.lineno, node.col_offset) and (node.end_lineno,
                                                        node.end_col_offset) <= end


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def helper_edit(ctx: FixContext, name: str, code: str, uses: list[ast.AST]) -> Edit | None:
    """Insert ``code`` (defining ``name``) unless the module already defines ``name``."""
    tree = module_tree(ctx.text)
    if defines(tree, name):
        return None
    anchor = None
    for i, stmt in enumerate(tree.body):
        is_def = isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        if is_def or any(_contains(stmt, u) for u in uses):
            anchor = i
            break
    if anchor is None:
        return None
    lines = ctx.index
    if anchor == 0:
        pos = lines.starts[_first_line(tree.body[0]) - 1]
        return Edit(pos, pos, code + "\n\n")
    prev_end = tree.body[anchor - 1].end_lineno
    if prev_end >= len(lines.starts):
        return None
    pos = lines.starts[prev_end]
    follows_blank = lines.line_text(prev_end + 1).strip() == ""
    return Edit(pos, pos, "\n\n" + code + ("" if follows_blank else "\n\n"))


def enclosing_statement(tree: ast.Module, node: ast.AST) -> tuple[ast.stmt, list] | None:
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
