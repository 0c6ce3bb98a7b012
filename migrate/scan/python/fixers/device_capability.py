"""Comparisons of torch.cuda.get_device_capability() with a compute capability.

``torch.npu.get_device_capability()`` returns None unless TORCH_NPU_DEVICE_CAPABILITY is
set, so ``>= (8, 0)`` raises on an NPU. What such checks ask is almost always "is this an
Ampere-class GPU or newer" (bf16, TF32, flash attention), which on Ascend is
``torch.npu.is_bf16_supported()``; a threshold above (8, 0) asks for Hopper-only features
(FP8, TMA) that have no NPU counterpart, so it becomes a constant. Handled forms:
``cap() OP (M, m)``, ``cap()[0] OP M`` and the mirrored ``(M, m) OP cap()``.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import module_tree, spell

AMPERE = (8, 0)
MIRROR = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
DESCRIPTION = (
    "replace the compute-capability test by torch.npu.is_bf16_supported() (thresholds up to "
    "8.0) or a constant (above 8.0): the branch taken on an NPU is the Ampere-class one"
)


def _same(a: ast.expr, b: ast.expr) -> bool:
    return (a.lineno, a.col_offset, a.end_lineno, a.end_col_offset) == (
        b.lineno,
        b.col_offset,
        b.end_lineno,
        b.end_col_offset,
    )


def _threshold(node: ast.expr, major_only: bool) -> tuple[int, int] | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if major_only and isinstance(value, int) and not isinstance(value, bool):
        return (value, 0)
    if isinstance(value, tuple) and len(value) == 2 and all(type(v) is int for v in value):
        return value
    return None


def _find(tree: ast.Module, call: ast.Call):
    """The Compare using the call, whether it uses [0], and the other operand."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        for side, other, op in (
            (node.left, node.comparators[0], type(node.ops[0])),
            (node.comparators[0], node.left, MIRROR.get(type(node.ops[0]))),
        ):
            major = (
                isinstance(side, ast.Subscript)
                and _same(side.value, call)
                and isinstance(side.slice, ast.Constant)
                and side.slice.value == 0
            )
            if (major or _same(side, call)) and op in MIRROR:
                return node, major, other, op
    return None


def _at_least(op: type[ast.cmpop], threshold: tuple[int, int]) -> tuple[tuple[int, int], bool]:
    """Rewrite `cap OP t` as (T, positive): positive means `cap >= T`, else `cap < T`."""
    bump = (threshold[0], threshold[1] + 1)
    return {
        ast.GtE: (threshold, True),
        ast.Gt: (bump, True),
        ast.Lt: (threshold, False),
        ast.LtE: (bump, False),
    }[op]


@fixer("device-capability-compare")
def device_capability_compare(ctx: FixContext, call: ast.Call) -> Draft | None:
    found = _find(module_tree(ctx.text), call)
    if found is None:
        return None
    compare, major, other, op = found
    threshold = _threshold(other, major)
    if threshold is None:
        return None
    if major:
        threshold = (threshold[0] + (op in (ast.Gt, ast.LtE)), 0)
        op = {ast.Gt: ast.GtE, ast.LtE: ast.Lt}.get(op, op)
    level, positive = _at_least(op, threshold)
    imports: list[str] = []
    if level <= AMPERE:
        name, imports = spell(ctx, "torch.npu.is_bf16_supported")
        text = f"{name}()" if positive else f"not {name}()"
    else:
        text = "False" if positive else "True"
    if text.startswith("not ") and not _test_position(module_tree(ctx.text), compare):
        text = f"({text})"
    return Draft(DESCRIPTION, [ctx.replace(compare, text)], ["import torch_npu", *imports])


def _test_position(tree: ast.Module, compare: ast.Compare) -> bool:
    """True if the comparison is a whole test/operand where `not x` needs no parentheses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert) and _same(node.test, compare):
            return True
        if isinstance(node, ast.BoolOp) and any(_same(v, compare) for v in node.values):
            return True
        if (
            isinstance(node, ast.Assign | ast.Return)
            and node.value is not None
            and _same(node.value, compare)
        ):
            return True
    return False
