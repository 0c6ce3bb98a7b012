"""Culprit-op bisection for fused ops: which torch_npu fused op call changes a ported
model's result.

A port swaps compositions of plain torch ops for fused kernels (``npu_rotary_mul``,
``npu_rms_norm``, ``npu_swiglu``, ``npu_fusion_attention``, ...): one wrong layout, mode
or argument and the model computes something else, with nothing to say which call. This
runs the model as ported (every fused call as it is), then with fused calls swapped back
to their native composition - given by the caller; ``migrate bisect`` passes the
plain-torch references of migrate/emulate/fused, which follow each op's documentation - or
run in float32 (``swap="fp32"``), and compares each
result with the ported one by the gate's thresholds for the output's precision class:

1. all fused calls swapped: do the fused ops change the result at all?
2. each op kind swapped alone: which kinds change it;
3. for a kind that does, each call site (file:line), then its calls halved until one call
   (the layer) is left - or every call of the site is at fault.

Fused calls are found by name: attributes of the ``torch_npu`` module (real or emulated)
and globals of the user's modules named like a fused op or bound to one (``from torch_npu
import npu_rotary_mul as rope``). An honest fused op differs from its composition by
rounding only and passes; a swap that moves the output past the thresholds names its op.
Every run repeats the ported model's forward: 2 + kinds + sites + log2(calls) forwards.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

SWAPS = ("native", "fp32")


@dataclass(frozen=True)
class FusedOp:
    """A fused op the bisection knows: its name (``torch_npu.<name>``), its native
    composition in plain torch, and other objects that are this op (an emulated
    reference bound under another name)."""

    name: str
    native: Callable
    aliases: tuple = ()


def _in_fp32(impl: Callable) -> Callable:
    """``impl`` on float32 copies of its floating inputs; outputs cast back to the dtype of
    the first floating input."""
    import torch

    def run(*args: Any, **kwargs: Any) -> Any:
        floats = [
            a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()
        ]
        dtype = floats[0].dtype if floats else None

        def up(x: Any) -> Any:
            return x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

        def down(x: Any) -> Any:
            if isinstance(x, torch.Tensor) and x.is_floating_point() and dtype is not None:
                return x.to(dtype)
            if isinstance(x, (tuple, list)):
                return type(x)(down(v) for v in x)
            return x

        return down(impl(*map(up, args), **{k: up(v) for k, v in kwargs.items()}))

    return run


class Calls:
    """The fused calls of one forward, in order: ``(op, site, nth call of the op at that
    site)`` - the index counts the site's calls, as a culprit's "calls i of N" does."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []
        self._count: Counter[tuple[str, str]] = Counter()

    def note(self, name: str) -> tuple[str, str, int]:
        from migrate.core.callsite import code_location

        site = code_location(2) or "?"
        nth = self._count[name, site]
        self._count[name, site] += 1
        call = (name, site, nth)
        self.seen.append(call)
        return call


def _bindings(ops: dict[str, FusedOp]) -> list[tuple[Any, str, Any, str]]:
    """``(module, attribute, current value, op)`` for every place a fused op is reachable
    by name: torch_npu (real or emulated) and the user's modules."""
    from migrate.core.callsite import is_user_file

    npu = sys.modules.get("torch_npu")
    known: dict[int, str] = {}
    for name, op in ops.items():
        for obj in (getattr(npu, name, None), *op.aliases):
            if obj is not None:
                known[id(obj)] = name
    found = []
    for module in list(sys.modules.values()):
        space = getattr(module, "__dict__", None)
        if not isinstance(space, dict):
            continue
        user = is_user_file(getattr(module, "__file__", None) or "<none>")
        if not (user or module is npu):
            continue
        for attr, value in list(space.items()):
            op_name = attr if attr in ops else known.get(id(value))
            if op_name is not None and callable(value):
                found.append((module, attr, value, op_name))
    return found


@contextmanager
def switched(
    ops: dict[str, FusedOp],
    plan: Callable[[tuple[str, str, int]], bool],
    calls: Calls,
    swap: str = "native",
    check: Callable | None = None,
):
    """Within the block, every fused op call is noted in ``calls``; a call for which
    ``plan(call)`` is true runs swapped (its native composition, or in float32). With
    ``check``, every call that runs fused also runs swapped on the same inputs and
    ``check(call, fused_output, swapped_output)`` sees both."""
    bindings = _bindings(ops)
    originals: dict[int, Any] = {}

    def wrap(value: Any, op: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            site = calls.note(op)
            swapped = ops[op].native if swap == "native" else _in_fp32(value)
            if plan(site):
                return swapped(*args, **kwargs)
            out = value(*args, **kwargs)
            if check is not None:
                check(site, out, swapped(*args, **kwargs))
            return out

        call.__wrapped__ = value  # type: ignore[attr-defined]
        return call

    try:
        for module, attr, value, op in bindings:
            originals[id(value)] = originals.get(id(value)) or wrap(value, op)
            setattr(module, attr, originals[id(value)])
        yield calls
    finally:
        for module, attr, value, _ in bindings:
            setattr(module, attr, value)


def _run(
    model: Any,
    batches: list,
    ops: dict[str, FusedOp],
    plan: Callable,
    swap: str,
    check: Callable | None = None,
) -> tuple[list[Any], Calls]:
    import torch

    from migrate.core.errors import UsageError
    from migrate.precision.sensitivity.measure import run_batches

    calls = Calls()
    with switched(ops, plan, calls, swap, check):
        torch.manual_seed(0)
        try:
            out = run_batches(model, batches)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise UsageError(f"bisect: the model failed: {' '.join(str(exc).split())[:300]}") from None
    return out, calls


def _verdict(ref: Any, got: Any, gate: Any, run_class: str | None) -> dict:
    """``got`` against ``ref`` (outputs of a run, or of one call), judged by the gate's
    thresholds for their precision class. Outputs of another shape (a kernel returning
    BNSD where its composition returns BSND) differ: never left out of the comparison."""
    from migrate.precision.flatten import iter_tensors

    pairs = [
        (a, b)
        for (_, a), (_, b) in zip(iter_tensors(ref), iter_tensors(got), strict=False)
        if a.is_floating_point() and b.is_floating_point()
    ]
    if not pairs:
        return {"status": "fail", "reason": "no floating output to compare", "rel_err": None, "cosine": None}
    dtype = min((str(a.dtype).removeprefix("torch.") for a, _ in pairs), key=lambda d: _RANK.get(d, 9))
    th = gate.for_entry("<output>", dtype, dtype, run_class)
    odd = next(((a, b) for a, b in pairs if a.shape != b.shape), None)
    if odd is not None:
        return _shape_differs(*odd, th)
    return _judged(pairs, th)


def _judged(pairs: list, th: dict) -> dict:
    import torch

    from migrate.precision.judge import judge, tensor_metrics

    a = torch.cat([x.detach().float().reshape(-1) for x, _ in pairs])
    b = torch.cat([y.detach().float().reshape(-1) for _, y in pairs])
    m = tensor_metrics(a, b, th)
    status, reason = judge(m, th)
    return {
        "status": "pass" if status == "warn" else status,
        "reason": reason,
        "rel_err": m.get("rel_err"),
        "cosine": m.get("cosine"),
        "class": th["class"],
    }


def _shape_differs(ref: Any, got: Any, th: dict) -> dict:
    """A failing verdict for outputs of different shapes; when an axis permutation of
    ``got`` has ``ref``'s shape and values (a layout mix-up such as BNSD for BSND), it is
    named, with the metrics after it under ``permuted``."""
    import itertools

    reason = f"output shape {tuple(got.shape)} differs from {tuple(ref.shape)}"
    out: dict = {"status": "fail", "reason": reason, "rel_err": None, "cosine": None, "class": th["class"]}
    if got.dim() != ref.dim() or got.dim() > 6 or sorted(got.shape) != sorted(ref.shape):
        return out
    for perm in itertools.permutations(range(got.dim())):
        moved = got.permute(perm)
        if moved.shape != ref.shape:
            continue
        after = _judged([(ref, moved)], th)
        if after["status"] == "pass":
            out.update(
                reason=f"{reason}: the same values with axes permuted {perm} "
                "(a layout mix-up, e.g. BNSD returned for BSND)",
                permuted={"axes": list(perm), "rel_err": after["rel_err"], "cosine": after["cosine"]},
            )
            break
    return out


_RANK = {"bfloat16": 0, "float16": 1, "float32": 3, "float64": 4}


def bisect_fused(
    model: Any,
    batches: list[tuple[tuple, dict]],
    fused: list[FusedOp],
    gate: Any = None,
    swap: str = "native",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Name the fused op call that changes ``model``'s result (docstring of the module);
    ``fused`` are the ops to look for (the emulator's references: ``migrate bisect``).
    Returns ``{"calls", "all", "ops", "sites", "culprit", "runs", "swap"}``."""
    from migrate.core.errors import UsageError
    from migrate.precision import run_precision
    from migrate.precision.thresholds import load_gate

    if swap not in SWAPS:
        raise UsageError(f"--swap must be one of {', '.join(SWAPS)}, got {swap!r}")
    gate = gate or load_gate()
    names = {op.name: op for op in fused}
    run_class = run_precision.run_class({"precision": run_precision.record(model)}, gate.profile)
    say = progress or (lambda text: None)
    runs = 0

    def trial(plan: Callable) -> dict:
        nonlocal runs
        runs += 1
        got, _ = _run(model, batches, names, plan, swap)
        return _verdict(base, got, gate, run_class)

    say("ported run, every fused call also swapped on its own inputs")
    local: dict[tuple[str, str, int], dict] = {}

    def check(call: tuple[str, str, int], fused: Any, swapped: Any) -> None:
        local[call] = _verdict(swapped, fused, gate, run_class)

    base, seen = _run(model, batches, names, lambda c: False, swap, check)
    runs += 1
    calls = seen.seen
    report: dict[str, Any] = {"swap": swap, "calls": _summary(calls, local), "culprit": None}
    if not calls:
        report.update(all=None, ops=[], sites=[], runs=runs)
        return report
    say("every fused call swapped")
    report["all"] = trial(lambda c: True)
    ops = []
    for op in sorted({c[0] for c in calls}):
        say(f"{op} swapped")
        ops.append({"op": op, **trial(lambda c, op=op: c[0] == op)})
    report["ops"] = sorted(ops, key=_severity, reverse=True)
    report["sites"] = []
    for row in report["ops"]:
        if row["status"] != "fail":
            continue
        sites = sorted({c[1] for c in calls if c[0] == row["op"]})
        for site in sites:
            say(f"{row['op']} at {site} swapped")
            one = trial(lambda c, s=site, op=row["op"]: c[:2] == (op, s)) if len(sites) > 1 else dict(row)
            report["sites"].append(
                {"op": row["op"], "site": site, **{k: v for k, v in one.items() if k != "op"}}
            )
    report["sites"].sort(key=_severity, reverse=True)
    report["culprit"] = _culprit(calls, local, report, trial, say)
    report["runs"] = runs
    return report


def _culprit(calls: list, local: dict, report: dict, trial: Callable, say: Callable) -> dict | None:
    """The fused call to blame: the first whose output differs from its composition on
    the same inputs (all such calls of its site), with its op's end-to-end effect; else,
    when only the end result moves (small differences that add up), the site whose swap
    moves it most, halved down to the calls that do."""
    effect = {row["op"]: row for row in report["ops"]}
    bad = [c for c in calls if local.get(c, {}).get("status") == "fail"]
    if bad:
        op, site = bad[0][:2]
        row = effect[op]
        return {
            "op": op,
            "site": site,
            "calls": [c[2] for c in bad if c[:2] == (op, site)],
            "of": sum(1 for c in calls if c[:2] == (op, site)),
            "local": local[bad[0]],
            "also": sorted({f"{c[0]} at {c[1]}" for c in bad if c[:2] != (op, site)}),
            "rel_err": row["rel_err"],
            "cosine": row["cosine"],
            "changes_result": row["status"] == "fail",
            "reason": f"its output differs from the native composition on the same "
            f"inputs ({local[bad[0]]['reason']})",
        }
    top = next((s for s in report["sites"] if s["status"] == "fail"), None)
    if top is None:
        return None
    nths = [c[2] for c in calls if c[:2] == (top["op"], top["site"])]
    return {
        "op": top["op"],
        "site": top["site"],
        "calls": _halve(top["op"], top["site"], nths, trial, say),
        "of": len(nths),
        "local": None,
        "also": [],
        "rel_err": top["rel_err"],
        "cosine": top["cosine"],
        "changes_result": True,
        "reason": f"swapping it back moves the result ({top['reason']}); each call "
        "alone stays within its class",
    }


def _halve(op: str, site: str, nths: list[int], trial: Callable, say: Callable) -> list[int]:
    """The calls of one site to blame: halve while exactly one half changes the result."""
    current = list(nths)
    while len(current) > 1:
        half = len(current) // 2
        left, right = current[:half], current[half:]
        say(f"{op} at {site}: calls {left[0]}..{left[-1]} swapped")
        a = trial(lambda c, keep=set(left): c[:2] == (op, site) and c[2] in keep)
        b = trial(lambda c, keep=set(right): c[:2] == (op, site) and c[2] in keep)
        fail_a, fail_b = a["status"] == "fail", b["status"] == "fail"
        if fail_a == fail_b:
            break  # both halves (or neither alone): several calls share the fault
        current = left if fail_a else right
    return current


def _severity(row: dict) -> float:
    rel = row.get("rel_err")
    return math.inf if rel is None or (isinstance(rel, float) and math.isnan(rel)) else rel


def _summary(calls: list[tuple[str, str, int]], local: dict) -> list[dict]:
    """One row per op and call site: how many calls, how many differ from their
    composition on their own inputs."""
    rows: dict[tuple[str, str], dict] = {}
    for call in calls:
        row = rows.setdefault(
            call[:2], {"op": call[0], "site": call[1], "calls": 0, "differ": 0, "worst_rel_err": 0.0}
        )
        row["calls"] += 1
        got = local.get(call) or {}
        if got.get("status") == "fail":
            row["differ"] += 1
        rel = got.get("rel_err")
        if rel is not None and not math.isnan(rel):
            row["worst_rel_err"] = max(row["worst_rel_err"], rel)
    return list(rows.values())
