"""What a module's code says around a place, for naming the device there
(migrate/scan/python/device_names.py): the names a function or block binds, the
``device`` assignments of a body, which expressions hold a device, what the module's
top-level statements define, and where its imports end.
"""

from __future__ import annotations

import ast
import collections

from migrate.scan.device_types import DEVICE_TYPES
from migrate.scan.helper_finder import wrapped


def _targets(stmt):
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _bound_in(fn) -> set[str]:
    a = fn.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    if isinstance(fn, ast.Lambda):
        return names
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
    return names


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in ``stmt`` (not in a nested function or class)."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    return []


def _binds(stmts: list[ast.stmt], name: str) -> bool:
    """Does running ``stmts`` to their end bind ``name``, or leave the block (raise,
    return, break, continue) on the way?"""
    for stmt in stmts:
        if isinstance(stmt, (ast.Raise, ast.Return, ast.Break, ast.Continue)):
            return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            named = (isinstance(t, ast.Name) and t.id == name for t in _targets(stmt))
            if stmt.value is not None and any(named):
                return True
        elif isinstance(stmt, ast.If):
            if _binds(stmt.body, name) and _binds(stmt.orelse, name):
                return True
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if _binds(stmt.body, name):
                return True
        elif isinstance(stmt, ast.Try):
            if _binds(stmt.finalbody, name) or (
                _binds(stmt.body + stmt.orelse, name) and all(_binds(h.body, name) for h in stmt.handlers)
            ):
                return True
    return False


def _device_param(fn, name: str) -> bool:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    for arg, default in pairs:
        if arg.arg == name:
            return default is None or _devicish(default, {})
    return False


class _TopLevel:
    """What a module's top-level statements define, indexed by name."""

    def __init__(self, body: list[ast.stmt]):
        self.defs: dict[str, list[ast.stmt]] = {}  # functions, in order
        self.classes: set[str] = set()
        self.first_assign: dict[str, ast.stmt] = {}
        self.relative_import = False
        self.absolute_from: set[str] = set()  # top packages of `from pkg... import`
        self.main_guard = False  # an `if __name__ == "__main__":` block
        self.imported: set[str] = set()  # names bound by top-level imports
        for n in body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(n.name, []).append(n)
            elif isinstance(n, ast.ClassDef):
                self.classes.add(n.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                for t in _targets(n):
                    if isinstance(t, ast.Name):
                        self.first_assign.setdefault(t.id, n)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                self.imported.update((a.asname or a.name).split(".")[0] for a in n.names)
            if isinstance(n, ast.ImportFrom):
                if n.level:
                    self.relative_import = True
                elif n.module:
                    self.absolute_from.add(n.module.split(".")[0])
            elif isinstance(n, ast.If) and _is_main_guard(n.test):
                self.main_guard = True


def _runs_inside(fn, child) -> bool:
    """Is ``child`` (a direct child of the function ``fn``) not one of its decorators (which
    run where the def is)? Parameter defaults count as inside: `lazy_default` moves them there."""
    return not any(child is d for d in getattr(fn, "decorator_list", ()))


def _is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and any(
        isinstance(x, ast.Constant) and x.value == "__main__" for x in sides
    )


def _assignments(body: list[ast.stmt], name: str):
    """Assignments to ``name`` in ``body``, looking into if/try/with blocks (the usual device
    selection chains) but not into loops or nested functions."""
    stack = collections.deque(body)
    while stack:
        node = stack.popleft()
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and any(isinstance(t, ast.Name) and t.id == name for t in _targets(node))
        ):
            yield node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            stack.extend(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []))


def _self_device(cls: ast.ClassDef, attr: str, own: dict) -> bool:
    for sub in ast.walk(cls):
        if isinstance(sub, ast.Assign) and any(
            isinstance(t, ast.Attribute)
            and t.attr == attr
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for t in sub.targets
        ):
            if not _devicish(sub.value, own):
                return False
            return True
    return False


def _makes_torch_device(value: ast.AST | None) -> bool:
    """``torch.device(...)`` or ``<tensor or module>.device``: a torch.device object."""
    if isinstance(value, ast.Call):
        func = value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "device"
            and isinstance(func.value, ast.Name)
            and func.value.id == "torch"
        )
    return isinstance(value, ast.Attribute) and value.attr == "device"


def _devicish(value: ast.AST | None, own: dict) -> bool:
    """Does ``value`` hold a device (not one that is always the CPU)?"""
    if value is None:
        return False
    if isinstance(value, ast.Constant):
        return (
            isinstance(value.value, str)
            and value.value.split(":")[0] in DEVICE_TYPES
            and value.value.split(":")[0] != "cpu"
        )
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.IfExp):
        return _devicish(value.body, own) or _devicish(value.orelse, own)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "device":  # torch.device(...)
            return not (
                value.args and isinstance(value.args[0], ast.Constant) and value.args[0].value == "cpu"
            )
        helper = name in own and wrapped(own[name].kind) is None  # a wrapper's call gives no device
        return helper or "device" in name.lower() or "accelerator" in name.lower()
    if isinstance(value, ast.Attribute):
        return value.attr == "device" or value.attr.endswith("_device")
    if isinstance(value, ast.Name):
        return value.id.endswith("device")
    return False


def _after_imports(tree: ast.Module, index, text: str) -> int:
    """Offset of the line after the module's last top-level import (or try/if block holding
    imports) before its first function or class."""
    last: ast.stmt | None = None
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            last = node
        elif isinstance(node, (ast.Try, ast.If)) and any(
            isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body
        ):
            last = node
    if last is None:
        return 0
    line = last.end_lineno or last.lineno
    return index.starts[line] if line < len(index.starts) else len(text)


def _imports_torch(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in node.names)
    return (
        isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch"
    )


def torch_binding(tree: ast.Module) -> str | None:
    """How the module binds torch: "plain" (a statement of the module body), "guarded"
    (only under a module-level ``try`` / ``if``: an optional dependency), "local" (only
    inside functions or classes), None (never)."""
    if any(_imports_torch(stmt) for stmt in tree.body):
        return "plain"
    local = False
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local = local or any(_imports_torch(n) for n in ast.walk(stmt))
        elif any(_imports_torch(n) for n in ast.walk(stmt)):
            return "guarded"
    return "local" if local else None
