"""No half-ported code: a statement is rewritten whole, or its safe fixes wait for the rest.

Findings are grouped by the statement they sit in (for if/while/for/with: the header, so
``if torch.cuda.is_available() and torch.cuda.is_bf16_supported():`` is one unit). When a
unit holds a fix that `apply` makes by default and another finding that it does not make
by default, the safe fixes are raised to the stricter category — assisted (made together
with --unsafe-fixes) or manual (left to a person, who sees the annotation) — so the code
never ends up half CUDA, half NPU.

The same holds one level up: an ``if`` test that the port would open on an NPU
(``x.device.type == "cuda"`` -> ``in ("cuda", "npu")``, ``torch.cuda.is_available()`` ->
``get_device_module().is_available()``) waits while the branch it opens holds CUDA code the
port leaves as it is (accelerate's ``if model_device.type == "cuda": model.cuda(...)``):
widened, it would send the NPU into that code, where the original took another branch.
"""

from __future__ import annotations

import ast
import bisect

from migrate.core.findings import CATEGORY_RANK

_COMPOUND_HEADERS = {
    ast.If: ("test",),
    ast.While: ("test",),
    ast.For: ("target", "iter"),
    ast.AsyncFor: ("target", "iter"),
    ast.With: ("items",),
    ast.AsyncWith: ("items",),
}


def _innermost(f, offsets: list[int], stmts: list[ast.stmt]) -> dict[int, ast.stmt]:
    """offset -> the smallest statement whose span holds it, for every offset: one sweep
    over the statements sorted by start (spans nest), so the cost is linear in statements
    and findings (log factors aside), never their product."""
    spans = sorted(((*f.span(node), node) for node in stmts), key=lambda s: (s[0], -s[1]))
    out: dict[int, ast.stmt] = {}
    stack: list[tuple[int, int, ast.stmt]] = []
    i = 0
    for q in sorted(set(offsets)):
        while i < len(spans) and spans[i][0] <= q:
            while stack and stack[-1][1] <= spans[i][0]:
                stack.pop()
            stack.append(spans[i])
            i += 1
        while stack and stack[-1][1] <= q:
            stack.pop()
        if stack:
            out[q] = stack[-1][2]
    return out


def _unit(f, offset: int, node: ast.stmt | None):
    if node is None:
        return None
    fields = _COMPOUND_HEADERS.get(type(node))
    if fields:
        for name in fields:
            value = getattr(node, name)
            for part in value if isinstance(value, list) else [value]:
                pa, pb = f.span(part.context_expr if isinstance(part, ast.withitem) else part)
                if pa <= offset < pb:
                    return (id(node), "header")
        return None  # in the body of a compound statement, outside any smaller statement
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
        return None
    return (id(node), "stmt")


def _by_default(x, unsafe_too: bool) -> bool:
    return x.fix is not None and (x.fix.applicability == "safe" or unsafe_too)


def settle(f, findings: list) -> list:
    """``findings``, with safe fixes that share a statement with findings `apply` leaves by
    default raised (new findings)."""
    live = [x for x in findings if not x.npu_aware]
    if len(live) < 2:
        return findings
    stmts = [n for t, ns in f.by_type.items() if issubclass(t, ast.stmt) for n in ns]
    offsets = [f.index.offset(x.line, x.column - 1) for x in live]
    holder = _innermost(f, offsets, stmts)
    units: dict[tuple, list] = {}
    for x, offset in zip(live, offsets):
        key = _unit(f, offset, holder.get(offset))
        if key is not None:
            units.setdefault(key, []).append(x)
    raised: dict[int, object] = {}
    for group in units.values():
        safe = [x for x in group if _by_default(x, False)]
        rest = [x for x in group if not _by_default(x, False)]
        if not safe or not rest:
            continue
        _hold(safe, rest, "in the same statement", raised)
    settled = [raised.get(id(x), x) for x in findings]
    return _guards(f, settled, [raised.get(id(x), x) for x in live], offsets)


def _hold(safe: list, reasons: list, where: str, raised: dict[int, object]) -> None:
    """Hold ``safe`` findings back behind the strictest of ``reasons`` (into ``raised``, by
    id): its category, and no fix where it is manual or has none."""
    strict = max(reasons, key=lambda x: CATEGORY_RANK[x.category])
    note = f"held back: {strict.rule} {where} needs review"
    for x in safe:
        if strict.category == "manual" or strict.fix is None:
            raised[id(x)] = x.held_back("manual", None, note)
        else:
            raised[id(x)] = x.held_back(strict.category, x.fix.held_back(), note)


def _blocks(x) -> bool:
    """Code the port leaves as it is that would do something else on an NPU (not advice,
    not a no-op)."""
    return not _by_default(x, False) and x.category != "perf" and x.impact in ("crash", "behaviour")


def _guards(f, settled: list, live: list, offsets: list[int]) -> list:
    """``settled``, with the safe fixes of an ``if`` test held back where the branch the
    test opens holds a finding `apply` leaves by default (decided on the findings before
    this step, so holding an inner test never holds the tests around it)."""
    ifs = f.nodes(ast.If)
    if not ifs:
        return settled
    order = sorted(range(len(live)), key=lambda i: offsets[i])
    at = [offsets[i] for i in order]
    raised: dict[int, object] = {}
    for node in ifs:
        ha, hb = f.span(node.test)
        header = [live[order[i]] for i in range(bisect.bisect_left(at, ha), bisect.bisect_left(at, hb))]
        safe = [x for x in header if _by_default(x, False)]
        if not safe:
            continue
        ba, bb = f.span(node.body[0])[0], f.span(node.body[-1])[1]
        inside = [live[order[i]] for i in range(bisect.bisect_left(at, ba), bisect.bisect_left(at, bb))]
        blocking = [x for x in inside if _blocks(x)]
        if not blocking:
            continue
        _hold(safe, blocking, "in the branch this test opens", raised)
    return [raised.get(id(x), x) for x in settled]
