"""Optional imports: ``try: import x`` with an ``except ImportError`` that falls back.

    try:
        from flash_attn import flash_attn_func
        HAS_FLASH = True
    except ImportError:          # ModuleNotFoundError, Exception, a bare except or a tuple
        HAS_FLASH = False        # anything but a re-raise is a fallback

The same holds for code under an availability check, however it is written:

    if is_bnb_available():       # any is_<lib>_available() / importlib.util.find_spec(...)
        import bitsandbytes as bnb

A finding inside such a try or if body, or about a module every import of which in the file
sits in one, is *guarded*: the code already runs without the library, so the effort
model discounts it (migrate/report/effort.py) the same way for both spellings. Scoping is
flat, as for bindings.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TypeGuard, cast

from migrate.core.findings import LineIndex
from migrate.scan.python.spans import SpanIndex

_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_CATCHES = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass
class Guards:
    spans: list[tuple[int, int]] = field(default_factory=list)  # guarded try bodies
    modules: frozenset[str] = frozenset()  # top-level modules imported only there
    _index: SpanIndex[bool] | None = None

    def covers(self, offset: int, symbol: str = "") -> bool:
        if symbol and symbol.split(".", 1)[0] in self.modules:
            return True
        if self._index is None:
            self._index = SpanIndex([(a, b, True) for a, b in self.spans])
        return bool(self._index.at(offset))


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(
        isinstance(n, (ast.Name, ast.Attribute)) and (n.id if isinstance(n, ast.Name) else n.attr) in _CATCHES
        for n in names
    )


def _falls_back(handler: ast.ExceptHandler) -> bool:
    return not all(isinstance(stmt, ast.Raise) for stmt in handler.body)


_TRIES: tuple[type, ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _is_guarded_try(node: ast.AST) -> TypeGuard[ast.Try]:
    if not isinstance(node, _TRIES):
        return False
    try_node = cast(ast.Try, node)  # try/except* has the same fields
    handlers = [h for h in try_node.handlers if _catches_import_error(h)]
    imports = any(isinstance(s, (ast.Import, ast.ImportFrom)) for b in try_node.body for s in ast.walk(b))
    return imports and bool(handlers) and all(_falls_back(h) for h in handlers)


_AVAILABLE = ("find_spec", "find_loader")


def _is_availability_if(node: ast.AST) -> bool:
    """`if is_x_available():` / `if importlib.util.find_spec("x"):` (and `and` of such)."""
    if not isinstance(node, ast.If):
        return False
    tests = (
        node.test.values
        if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
        else [node.test]
    )
    for test in tests:
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
            test = test.left  # find_spec("x") is not None
        if not isinstance(test, ast.Call):
            continue
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if _names_a_library(name) or name in _AVAILABLE:
            return True
    return False


def _names_a_library(name: str) -> bool:
    """``is_<lib>_available``; a bare ``is_available()`` (``torch.cuda.is_available()``) asks
    for a device, not for an optional library: the code under it is the port's work."""
    return name.startswith("is_") and name.endswith("_available") and name != "is_available"


def _top_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    if node.level or not node.module:
        return []
    return [node.module.split(".")[0]]


def _statements(tree: ast.Module):
    """Every statement, at any depth (statements nest only in statement bodies: no
    expression is walked, which is most of a tree)."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        for name in _BODIES:
            children = getattr(node, name, None)
            if children:
                stack.extend(reversed(children))


def find_guards(tree: ast.Module, index: LineIndex) -> Guards:
    spans: list[tuple[int, int]] = []
    guarded_imports: set[int] = set()
    statements = list(_statements(tree))
    for node in statements:
        if (_is_guarded_try(node) or _is_availability_if(node)) and node.body:
            start = index.span(node.body[0])[0]
            end = index.span(node.body[-1])[1]
            spans.append((start, end))
            guarded_imports.update(
                id(sub)
                for sub in _statements(ast.Module(node.body, []))
                if isinstance(sub, (ast.Import, ast.ImportFrom))
            )
    if not spans:
        return Guards()
    inside: set[str] = set()
    outside: set[str] = set()
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (inside if id(node) in guarded_imports else outside).update(_top_modules(node))
    return Guards(spans, frozenset(inside - outside))
