"""Code that never runs on the target: ``if False:`` and guards for a torch older than any
torch_npu runs with.

    if Version(torch.__version__) < Version("1.8.0"):   # never true where torch_npu runs
        device_ids = [torch.cuda.current_device()]       # dead: left as is, costs nothing
    else:
        ...                                              # live: ported as usual

A test is decided when it is ``False``/``0``/``True``/``1``, or compares the torch version
(``torch.__version__``, wrapped in ``Version()``/``parse()`` or not; or a module-level name
bound to such a comparison) with a version literal that lies at or below the oldest torch a
torch_npu release still runs with (``oldest_torch`` in rules/effort_defaults.yaml): the
comparison then has one answer for every torch the port can meet. The arm that answer
never takes is dead; findings there are left as they are (every target: a fix there would
be a needless edit) and cost nothing in the effort estimate.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable

from packaging.version import InvalidVersion, Version

from migrate.core.effort_spec import defaults

_TORCH_VERSION = re.compile(r"\btorch\.__version__\b")
_VERSION_TEXT = re.compile(r"^\d+(\.\d+){0,3}$")
_OPS: dict[type, Callable[[Version, Version], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
WHY = "never runs on the target (a guard for an older torch than torch_npu runs with, or `if False`)"


def _literal_version(node: ast.AST) -> Version | None:
    """``"1.8.0"``, ``Version("1.8")``, ``parse("1.8")``, ``(1, 8)``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _VERSION_TEXT.match(node.value):
        text = node.value
    elif (
        isinstance(node, ast.Tuple)
        and node.elts
        and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)
    ):
        text = ".".join(str(e.value) for e in node.elts)  # type: ignore[attr-defined]
    else:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_answer(f, test: ast.AST, oldest: Version) -> bool | None:
    """What a torch-version comparison gives for every torch >= ``oldest`` (None: it depends)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS):
        return None
    left, right, op = test.left, test.comparators[0], type(test.ops[0])
    if _TORCH_VERSION.search(f.source(right)):
        left, right, op = right, left, _FLIP[op]
    bound = _literal_version(right)
    if bound is None or not _TORCH_VERSION.search(f.source(left)) or bound > oldest:
        return None
    if op in (ast.Gt, ast.GtE):  # torch >(=) bound: true for every torch from oldest on
        return True if bound < oldest or op is ast.GtE else None
    return False if bound < oldest or op is ast.Lt else None


def _answer(f, test: ast.AST, names: dict[str, bool], oldest: Version) -> bool | None:
    if isinstance(test, ast.Constant) and type(test.value) in (bool, int):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _answer(f, test.operand, names, oldest)
        return None if inner is None else not inner
    if isinstance(test, ast.Name):
        return names.get(test.id)
    if isinstance(test, ast.BoolOp):
        answers = [_answer(f, v, names, oldest) for v in test.values]
        if isinstance(test.op, ast.And) and False in answers:
            return False
        if isinstance(test.op, ast.Or) and True in answers:
            return True
        return None
    return version_answer(f, test, oldest)


def _bound_names(f, oldest: Version) -> dict[str, bool]:
    """Module-level ``NAME = <torch version comparison>`` with one answer on the target."""
    out: dict[str, bool] = {}
    for stmt in f.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            answer = version_answer(f, stmt.value, oldest)
            if answer is not None:
                out[stmt.targets[0].id] = answer
    return out


def dead_regions(f, nodes) -> list[tuple[int, int, str]]:
    """Character spans of the arms of ``if`` statements that never run on the target."""
    if "False" not in f.text and "__version__" not in f.text and "if 0" not in f.text:
        return []
    oldest = Version(defaults().oldest_torch)
    names = _bound_names(f, oldest) if "__version__" in f.text else {}
    out = []
    for node in nodes(ast.If):
        answer = _answer(f, node.test, names, oldest)
        arm = node.body if answer is False else node.orelse if answer is True else None
        if arm:
            out.append((f.span(arm[0])[0], f.span(arm[-1])[1], WHY))
    return out
