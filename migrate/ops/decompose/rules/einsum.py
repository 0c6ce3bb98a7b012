"""Two-input Einsum -> Transpose / Reshape / MatMul (batch, kept and contracted letters)."""

from __future__ import annotations

from math import prod

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition


def parse(equation: str) -> tuple[str, str, str] | None:
    """('lhs', 'rhs', 'out') of a two-input equation without ellipsis or repeated letters."""
    eq = equation.replace(" ", "")
    if "..." in eq or eq.count(",") != 1:
        return None
    ins, _, out = eq.partition("->")
    lhs, rhs = ins.split(",")
    if "->" not in eq:
        out = "".join(sorted(c for c in set(lhs + rhs) if (lhs + rhs).count(c) == 1))
    if any(len(set(t)) != len(t) for t in (lhs, rhs, out)):
        return None
    if set(out) - set(lhs + rhs):
        return None
    return lhs, rhs, out


def _transpose(b, value, have: str, want: str):
    if have == want:
        return value
    return b.op("Transpose", value, perm=[have.index(c) for c in want])


def _reshape(b, value, cur: list[int], new: list[int]):
    if cur == new:
        return value
    return b.op("Reshape", value, b.ints(new))


def _sum_out(b, value, letters: str, drop: str):
    if not drop:
        return value, letters
    axes = [letters.index(c) for c in drop]
    value = b.op("ReduceSum", value, b.ints(axes), keepdims=0)
    return value, "".join(c for c in letters if c not in drop)


@decomposition("einsum-matmul", "Einsum", emits=["Transpose", "Reshape", "MatMul", "ReduceSum", "Constant"])
def einsum_matmul(node, b):
    """Group letters into batch / kept / contracted, then one batched MatMul."""
    parsed = parse(b.attr("equation", ""))
    if len(node.inputs) != 2 or parsed is None:
        return Decline("only two-input equations without '...' or repeated letters")
    lhs, rhs, out = parsed
    sa, sb = b.static_shape(node.inputs[0]), b.static_shape(node.inputs[1])
    if sa is None or sb is None or len(sa) != len(lhs) or len(sb) != len(rhs):
        return Decline("needs static input shapes")
    size = {**dict(zip(rhs, sb, strict=True)), **dict(zip(lhs, sa, strict=True))}
    a, la = _sum_out(b, node.inputs[0], lhs, "".join(c for c in lhs if c not in rhs + out))
    bb, lb = _sum_out(b, node.inputs[1], rhs, "".join(c for c in rhs if c not in lhs + out))
    batch = "".join(c for c in out if c in la and c in lb)
    keep_a = "".join(c for c in la if c in out and c not in lb)
    keep_b = "".join(c for c in lb if c in out and c not in la)
    contract = "".join(c for c in la if c in lb and c not in out)
    dims_a = dict(zip(lhs, sa, strict=True))
    dims_b = dict(zip(rhs, sb, strict=True))
    a = _transpose(b, a, la, batch + keep_a + contract)
    a = _reshape(
        b,
        a,
        [dims_a[c] for c in batch + keep_a + contract],
        [dims_a[c] for c in batch] + [prod(size[c] for c in keep_a), prod(size[c] for c in contract)],
    )
    bb = _transpose(b, bb, lb, batch + contract + keep_b)
    bb = _reshape(
        b,
        bb,
        [dims_b[c] for c in batch + contract + keep_b],
        [dims_b[c] for c in batch] + [prod(size[c] for c in contract), prod(size[c] for c in keep_b)],
    )
    y = b.op("MatMul", a, bb)
    bsz = [max(dims_a[c], dims_b[c]) for c in batch]
    y = _reshape(
        b,
        y,
        bsz + [prod(size[c] for c in keep_a), prod(size[c] for c in keep_b)],
        bsz + [size[c] for c in keep_a + keep_b],
    )
    return [_transpose(b, y, batch + keep_a + keep_b, out)]
