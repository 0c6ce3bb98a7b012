"""The torch versions that run a piece of code, from the version tests around it.

mmengine's ``autocast`` runs ``torch.cuda.amp.autocast`` only
``if digit_version('1.5.0') <= digit_version(TORCH_VERSION) < digit_version('1.10.0'):``;
``torch.amp.autocast(device_type)`` (torch >= 1.10) exists in none of the versions that run
it. ``torch_range(f, node)`` gives ``(lowest, below)``: the code at ``node`` runs on torch
``>= lowest`` (None: not said) and ``< below`` (None: not said), from the ``if`` tests and
conditional expressions it sits in (their branch for the test holding; a single bound's
``else`` branch for it failing) and ``and`` of such tests. A torch version is written as
``torch.__version__``, a name spelled ``TORCH_VERSION`` / ``torch_version`` (any case), or
either wrapped in a version parser (``digit_version``, ``version.parse``, ``Version``,
``parse_version``, ``LooseVersion``); a bound as a version string, parsed or not. The
``except AttributeError:`` fallback of a ``try`` using an API of torch X.Y runs below X.Y
(torch_floors.py).
"""

from __future__ import annotations

import ast
import re

from migrate.scan.python.torch_floors import fallback_floor

Version = tuple[int, int]

_PARSERS = {"digit_version", "parse", "Version", "parse_version", "LooseVersion", "StrictVersion"}
_VERSION_TEXT = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")
# the bound each comparison sets, the torch version on the left: op -> (lower?, inclusive?)
_OPS: dict[type, tuple[bool, bool]] = {
    ast.GtE: (True, True),
    ast.Gt: (True, False),
    ast.Lt: (False, False),
    ast.LtE: (False, True),
}
_FLIP: dict[type, type] = {ast.GtE: ast.LtE, ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.LtE: ast.GtE}
_NEGATE: dict[type, type] = {ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.Lt: ast.GtE, ast.LtE: ast.Gt}


def torch_range(f, node: ast.AST) -> tuple[Version | None, Version | None]:
    """(lowest, below): the torch versions the code at ``node`` runs on, from the version
    tests around it (module docstring)."""
    lowest: Version | None = None
    below: Version | None = None
    child, parent = node, f.parent(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp)):
            body = parent.body if isinstance(parent, ast.If) else [parent.body]
            orelse = parent.orelse if isinstance(parent, ast.If) else [parent.orelse]
            holds = any(child is s for s in body)
            if holds or any(child is s for s in orelse):
                for lo, hi in _bounds(f, parent.test, holds):
                    if lo is not None and (lowest is None or lo > lowest):
                        lowest = lo
                    if hi is not None and (below is None or hi < below):
                        below = hi
        elif isinstance(parent, ast.ExceptHandler) and any(child is s for s in parent.body):
            hi = fallback_floor(f, parent)
            if hi is not None and (below is None or hi < below):
                below = hi
        child, parent = parent, f.parent(parent)
    return lowest, below


def _bounds(f, test: ast.expr, holds: bool) -> list[tuple[Version | None, Version | None]]:
    """The (lowest, below) bounds ``test`` sets where it holds (``holds``) or fails."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and holds:
        return [b for value in test.values for b in _bounds(f, value, True)]
    if not isinstance(test, ast.Compare):
        return []
    found = []
    left = test.left
    for op, right in zip(test.ops, test.comparators, strict=False):
        bound = _one(f, left, op, right)
        if bound is not None:
            found.append(bound)
        left = right
    if holds:
        return [_as_range(b) for b in found]
    if len(found) != 1 or len(test.ops) != 1:
        return []  # `not (a <= v < b)` is an `or`: no one bound
    kind, version = found[0]
    return [_as_range((_NEGATE[kind], version))]


def _one(f, left: ast.expr, op: ast.cmpop, right: ast.expr) -> tuple[type, tuple[int, int, int]] | None:
    """(op with the torch version on the left, the version) for ``left op right``."""
    kind = type(op)
    if kind not in _OPS:
        return None
    if _is_torch_version(f, left):
        version = _literal(right)
        return (kind, version) if version is not None else None
    if _is_torch_version(f, right):
        version = _literal(left)
        return (_FLIP[kind], version) if version is not None else None
    return None


def _as_range(bound: tuple[type, tuple[int, int, int]]) -> tuple[Version | None, Version | None]:
    """A bound as (lowest, below) on (major, minor): ``>= 1.10`` and ``> 1.9`` (1.9.1 runs
    it) run from 1.10 and 1.9; ``< 1.10`` below 1.10, ``< 1.10.1`` and ``<= 1.10`` below 1.11."""
    op, (major, minor, patch) = bound
    lower, inclusive = _OPS[op]
    if lower:
        return (major, minor), None
    return None, ((major, minor + 1) if inclusive or patch else (major, minor))


def _unwrapped(node: ast.expr) -> ast.expr:
    """The argument of a version parser call (``digit_version(x)`` -> ``x``)."""
    while isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in _PARSERS:
            break
        node = node.args[0]
    return node


def _is_torch_version(f, node: ast.expr) -> bool:
    node = _unwrapped(node)
    if isinstance(node, ast.Name):
        return node.id.lower() == "torch_version"
    if isinstance(node, ast.Attribute):
        if node.attr.lower() == "torch_version":
            return True
        return node.attr == "__version__" and f.qualname(node) == "torch.__version__"
    return False


def _literal(node: ast.expr) -> tuple[int, int, int] | None:
    node = _unwrapped(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _VERSION_TEXT.match(node.value)
        if m:
            return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return None
