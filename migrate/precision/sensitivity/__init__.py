"""`migrate sensitivity`: which layers can't take lower precision (docs/precision.md §6,
docs/contracts.md §5b).

With the reference model and calibration batches, lower one unit at a time (a module,
every module of one type, or one op kind) to a target format (formats.py), measure the
end-to-end effect, rank the units (most sensitive first), report per-channel activation
outliers, choose the fewest top-ranked units whose exclusion brings the whole model,
lowered, within the gate (or ``max_rel_err``), and emit what a user applies (emit.py).
Cost: one reference pass, one pass per unit, one per keep-set check (N + K + 1 forwards
over the calibration set).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision.sensitivity.formats import Format
from migrate.precision.sensitivity.measure import effect, outlier_stats, run_batches, severity
from migrate.precision.sensitivity.units import (
    UNIT_KINDS,
    OpCensus,
    Unit,
    leaf_modules,
    lowered,
    module_units,
    modules_called,
)
from migrate.precision.sensitivity.why import explain, outlier_ratios
from migrate.precision.threads import one_intra_op_thread

MIN_STABLE_BATCHES = 4

Progress = Callable[[int, int, str, float], None]


def _limit(fmt: Format, gate: Any, max_rel_err: float | None) -> dict:
    th = gate.dtypes.get(fmt.precision_class or "", {}) if gate is not None else {}
    rel = max_rel_err if max_rel_err is not None else th.get("rel_err_max", 0.05)
    return {"rel_err_max": float(rel), "cosine_min": th.get("cosine_min")}


def _within(e: dict, limit: dict) -> bool:
    if e["nonfinite"] or e["rel_err"] is None or e["rel_err"] > limit["rel_err_max"]:
        return False
    return limit["cosine_min"] is None or (e["cosine"] or 0.0) >= limit["cosine_min"]


def _stability(batches: int, per_half: list[list[str]] | None) -> dict:
    if batches < MIN_STABLE_BATCHES:
        return {
            "batches": batches,
            "stable": False,
            "note": (
                f"calibration set of {batches} batch(es): too small for a stable ranking "
                f"(use >= {MIN_STABLE_BATCHES}; a dict spec's 'calibration' list)"
            ),
        }
    a, b = per_half or ([], [])
    k = max(1, min(5, len(a)))
    overlap = len(set(a[:k]) & set(b[:k])) / k
    return {
        "batches": batches,
        "stable": overlap >= 0.6,
        "top_overlap": overlap,
        "note": f"the top {k} units of the two halves of the calibration set overlap by {overlap:.0%}",
    }


def _units(model: Any, kind: str, batches: list) -> list[Unit]:
    if kind not in UNIT_KINDS:
        raise UsageError(f"--unit must be one of {', '.join(UNIT_KINDS)}, got {kind!r}")
    if kind != "op":
        return module_units(model, kind)
    census = OpCensus()
    with census.mode:
        run_batches(model, batches[:1])
    return module_units(model, "op", sorted(census.found))


def run_sensitivity(
    model: Any,
    batches: list[tuple[tuple, dict]],
    fmt: Format,
    unit_kind: str = "module",
    loss: Any = None,
    gate: Any = None,
    max_units: int | None = None,
    max_rel_err: float | None = None,
    keep_out: Path | None = None,
    progress: Progress | None = None,
    model_name: str = "model",
    onnx_file: Any = None,
    onnx_name: str | None = None,
) -> dict:
    """The ranking and keep set as the JSON report (docs/contracts.md §5b); with
    ``keep_out``, the keep files (emit.py) for the nodes of ``onnx_file`` (a ModelProto
    read from ``onnx_name``) or of an export."""
    if not batches:
        raise UsageError("sensitivity needs at least one input batch")
    model.eval()
    with one_intra_op_thread():
        t0 = time.perf_counter()
        ref = run_batches(model, batches)
        forward_s = time.perf_counter() - t0
        ref_loss = None if loss is None else sum(float(loss(o)) for o in ref) / len(ref)
        units = _units(model, unit_kind, batches)
        total = len(units)
        if max_units is not None:
            units = units[:max_units]
        rows = _rank(model, batches, ref, units, fmt, loss, ref_loss, progress, forward_s)
        halves = (
            _halves(model, batches, ref, rows, units, fmt) if len(batches) >= MIN_STABLE_BATCHES else None
        )
        limit = _limit(fmt, gate, max_rel_err)
        keep, after, whole = _keep_set(model, batches, ref, rows, units, fmt, limit, loss, ref_loss)
        outliers = outlier_stats(model, batches, [n for n, _ in leaf_modules(model)])
        explain(rows, whole, outlier_ratios(model, batches, units))
    params = sum(p.numel() for p in model.parameters()) or 1
    kept_params = sum(u["params"] for u in keep)
    report = {
        "model": model_name,
        "format": fmt.label(),
        "unit": unit_kind,
        "calibration": _stability(len(batches), halves),
        "reference": {"forward_s": round(forward_s, 4), "loss": ref_loss},
        "units": {"total": total, "measured": len(units), "skipped": total - len(units)},
        "ranking": rows,
        "whole_model": whole,
        "keep": {
            "units": [u["name"] for u in keep],
            "modules": sorted({m for u in keep for m in u["modules"]}),
            "params_share": kept_params / params,
            "units_share": len(keep) / max(len(units), 1),
            "effect_after": after,
            "limit": limit,
            "within_limit": after is not None and _within(after, limit),
        },
        "outliers": outliers[:20],
    }
    if keep_out is not None:
        report["files"] = _emit(model, batches, keep, fmt, keep_out, model_name, (onnx_file, onnx_name))
    return report


def _rank(model, batches, ref, units, fmt, loss, ref_loss, progress, forward_s) -> list:
    rows, t0 = [], time.perf_counter()
    for i, unit in enumerate(units):
        with lowered(model, [unit], fmt):
            got = run_batches(model, batches)
        e = effect(ref, got, loss, ref_loss)
        rows.append(
            {
                "name": unit.name,
                "kind": unit.kind,
                "format": fmt.label(),
                "effect": e,
                "params": unit.params,
                "modules": unit.modules,
            }
        )
        if progress is not None:
            done = time.perf_counter() - t0
            progress(i + 1, len(units), unit.name, done / (i + 1) * (len(units) - i - 1))
    rows.sort(key=lambda r: -severity(r["effect"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return rows


def _halves(model, batches, ref, rows, units, fmt) -> list[list[str]]:
    """The ranking of the top units on each half of the calibration set."""
    by_name = {u.name: u for u in units}
    top = [by_name[r["name"]] for r in rows[:5]]
    mid = len(batches) // 2
    out = []
    for part, rpart in ((batches[:mid], ref[:mid]), (batches[mid:], ref[mid:])):
        scores = []
        for unit in top:
            with lowered(model, [unit], fmt):
                scores.append((severity(effect(rpart, run_batches(model, part))), unit.name))
        out.append([n for _, n in sorted(scores, reverse=True)])
    return out


def _keep_set(model, batches, ref, rows, units, fmt, limit, loss, ref_loss):
    """The fewest top-ranked units that, kept in high precision, leave the rest (lowered
    together) within ``limit`` (binary search over the ranking: about log2(N) passes);
    also the effect of lowering everything."""
    by_name = {u.name: u for u in units}
    seen: dict[int, dict] = {}

    def after(count: int) -> dict:
        if count not in seen:
            rest = [by_name[r["name"]] for r in rows[count:]]
            with lowered(model, rest, fmt):
                seen[count] = effect(ref, run_batches(model, batches), loss, ref_loss)
        return seen[count]

    whole = after(0)
    if _within(whole, limit):
        return [], whole, whole
    lo, hi = 0, len(rows)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _within(after(mid), limit):
            hi = mid
        else:
            lo = mid
    return rows[:hi], after(hi), whole


def _emit(model, batches, keep, fmt, out: Path, model_name: str, onnx: tuple[Any, str | None]) -> dict:
    """The keep files, or ``{"dir", "error", "missing"}`` and nothing written when the
    graph cannot be had or misses a kept unit (exit 2)."""
    from migrate.precision.sensitivity.emit import missing_note, unit_nodes, write_outputs
    from migrate.precision.sensitivity.onnx_graph import ExportError, graph_for

    if not keep:
        return write_outputs(out, [], None, {}, fmt.label(), model_name)
    kinds = {u["name"][3:] for u in keep if u["kind"] == "op"}
    try:
        graph = graph_for(model, batches[0], kinds, *onnx)
    except ExportError as exc:
        return {"dir": str(out), "error": f"{exc}; no files written (pass --onnx FILE)", "missing": []}
    by_unit, missing = unit_nodes(keep, graph, modules_called(model, batches[0]))
    if missing:
        note = missing_note(missing, graph)
        return {"dir": str(out), "error": f"{note}; no files written", "missing": missing}
    return write_outputs(out, keep, graph, by_unit, fmt.label(), model_name)
