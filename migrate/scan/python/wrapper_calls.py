"""``torch.cuda.M()`` as the project's call wrapper of ``M`` (ms-swift's ``get_device_count()``
for ``torch.cuda.device_count()``): a helper of kind ``call:M`` / ``run:M``
(migrate/scan/helper_finder.py) the file defines, imports, or the project has (imported on
use, as its other helpers are: DeviceNames._found)."""

from __future__ import annotations

import ast

from migrate.scan.helper_finder import wrapped, wrapper_kind


def wrapper_call(names, member: str, node: ast.AST, dropped: bool) -> tuple[str, list[str]] | None:
    """The call of the wrapper of ``torch.<vendor>.<member>()`` at ``node`` (DeviceNames
    ``names``), and the imports it needs, or None. ``dropped``: the call's value is unused, so a
    wrapper that returns nothing (``run:``) stands for it too. Never in the code the file's
    wrappers run (their own arms, the checks they call): routed through a wrapper, that code
    would call itself."""
    if _top_def(names, node) in _wrapper_code(names):
        return None
    forms = ("call", "run") if dropped else ("call",)
    for form in forms:
        hit = names._found(wrapper_kind(form, member), node)
        if hit is not None:
            return hit
    return None


def _top_def(names, node: ast.AST) -> str | None:
    """The name of the top-level function holding ``node``, if any."""
    cur, top = node, None
    while cur is not None:
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top = cur
        cur = names.f.parent(cur)
    return top.name if top is not None and top in names.f.tree.body else None


def _wrapper_code(names) -> set[str]:
    """The file's wrappers and the top-level functions they call, transitively (once per file)."""
    done = getattr(names, "_wrapper_code", None)
    if done is not None:
        return done
    defs = names.top.defs
    todo = [n for n, h in names.own.items() if h.call and wrapped(h.kind) is not None]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for fn in defs.get(name, ()):
            todo += [
                sub.func.id
                for sub in ast.walk(fn)
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in defs
            ]
    names._wrapper_code = seen
    return seen
