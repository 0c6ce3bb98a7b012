"""The performance section of an emulated run (`migrate run --emulate npu`): its report's
``perf`` observations (migrate/emulate/perf.py) and findings (host syncs, CPU fallbacks)
turned into findings of the perf catalog, with the same IDs and fixes a profile of the real
run gets from `migrate perf`. No timing exists in an emulated run: every saving is null.

Steps are the emulated run's: the work between two optimizer (or profiler) steps. The
first (before the first boundary) and the last (after it) are partial, so per-step figures
come from the steps between, when there are any.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict
from typing import Any

from migrate.perf.catalog import CatalogError, catalog, limit, make
from migrate.perf.model import Finding

__all__ = ["EMULATED_IDS", "performance_section"]

# The catalog rows this section produces; each must list "emulate" among its sources.
EMULATED_IDS = ("PERF102", "PERF105", "PERF107", "PERF202", "PERF204", "PERF302")


def _check_rows() -> None:
    for finding_id in EMULATED_IDS:
        entry = catalog().get(finding_id)
        if entry is None or "emulate" not in entry.sources:
            raise CatalogError(
                f"findings.yaml: {finding_id} is produced by the emulated run but lacks 'emulate'"
            )


def _complete(steps: list[dict]) -> list[dict]:
    return steps[1:-1] if len(steps) > 2 else steps


def _host_syncs(report: dict, procs: list[dict]) -> list[Finding]:
    rows = [r for r in report.get("findings", []) if r.get("kind") == "host_sync"]
    if not rows:
        return []
    per_step = [s["syncs"] for p in procs for s in _complete(p.get("steps") or [])]
    if per_step and max(per_step) < limit("PERF202", "min_per_step"):
        return []  # none inside a step (a checkpoint saved after the loop): no cost per step
    mean = sum(per_step) / len(per_step) if per_step else None
    ops: Counter[str] = Counter()
    for r in rows:
        ops[str(r["op"]).removeprefix("aten::")] += int(r.get("count", 1))
    listed = ", ".join(f"{op} x{n}" for op, n in ops.most_common(4))
    sites = [str(r["site"]) for r in sorted(rows, key=lambda r: -int(r.get("count", 1))) if r.get("site")]
    head = f"{mean:.3g} host sync(s) per step" if mean is not None else f"{sum(ops.values())} host sync(s)"
    return [
        make(
            "PERF202",
            f"{head} on the emulated NPU ({listed}): each waits for the device on the real one",
            {"per_step": per_step, "ops": dict(ops)},
            None,
            locations=sites,
        )
    ]


def _fallbacks(report: dict) -> list[Finding]:
    out = []
    by_op: dict[str, list[dict]] = defaultdict(list)
    for r in report.get("findings", []):
        if r.get("kind") == "cpu_fallback":
            by_op[str(r["op"])].append(r)
    for op, rows in sorted(by_op.items()):
        calls = sum(int(r.get("count", 1)) for r in rows)
        out.append(
            make(
                "PERF107",
                f"{op} has no NPU kernel: {calls} call(s) run on the host CPU through torch_npu's fallback",
                {"op": op, "calls": calls, "reason": rows[0].get("reason")},
                None,
                locations=[str(r["site"]) for r in rows if r.get("site")],
            )
        )
    return out


def _shapes(procs: list[dict]) -> list[Finding]:
    if any(p.get("jit_compile") is False for p in procs):
        return []  # binary kernels: a new shape compiles nothing
    changing: dict[str, dict] = {}
    for p in procs:
        for op, row in (p.get("changing_shapes") or {}).items():
            changing.setdefault(op, row)
    if not changing:
        return []
    ranked = sorted(changing.items(), key=lambda kv: -int(kv[1].get("shapes", 0)))
    listed = ", ".join(f"{op} ({row['shapes']} shapes)" for op, row in ranked[:5])
    return [
        make(
            "PERF102",
            f"{len(changing)} op(s) change input shapes between steps: {listed}; with jit_compile on "
            "(the program does not call set_compile_mode(jit_compile=False)) each new shape compiles again",
            {"changing_shapes": {op: int(row.get("shapes", 0)) for op, row in ranked}},
            None,
            locations=[
                str(row["site"]) for _, row in ranked if row.get("site") and row["site"] != "<backward>"
            ],
        )
    ]


def _collectives(procs: list[dict]) -> list[Finding]:
    small_bytes = limit("PERF302", "small_bytes")
    total: Counter = Counter()
    small: Counter = Counter()
    for p in procs:
        for name, row in (p.get("collectives") or {}).items():
            count, size = int(row.get("count", 0)), float(row.get("bytes", 0))
            total[name] += count
            if count and size / count < small_bytes:
                small[name] += count
    calls = sum(total.values())
    if not calls or sum(small.values()) / calls < limit("PERF302", "min_share"):
        return []
    listed = ", ".join(f"{n.split('::')[-1]} x{c}" for n, c in small.most_common(4))
    return [
        make(
            "PERF302",
            f"{sum(small.values())} of {calls} collectives move less than {small_bytes / 1048576:g} MiB "
            f"each ({listed})",
            {"small": dict(small), "total": dict(total)},
            None,
        )
    ]


def _optimizers(procs: list[dict]) -> list[Finding]:
    from migrate.perf.detectors.optimizer import fused_counterparts

    fused = fused_counterparts()
    used: Counter = Counter()
    for p in procs:
        used.update({k: int(v) for k, v in (p.get("optimizers") or {}).items()})
    return [
        make(
            "PERF105",
            f"{cls} ran {steps} step(s) on the NPU: torch_npu's fused optimizer does it in a few kernels",
            {"optimizer": cls, "steps": steps},
            None,
            fused=fused[cls],
        )
        for cls, steps in sorted(used.items())
        if cls in fused
    ]


def _compiled(procs: list[dict]) -> list[Finding]:
    sites: Counter = Counter()
    for p in procs:
        sites.update({k: int(v) for k, v in (p.get("compiled_on_npu") or {}).items()})
    if not sites:
        return []
    return [
        make(
            "PERF204",
            f"torch.compile on a module with NPU parameters ({sum(sites.values())} call(s))",
            {"calls": dict(sites)},
            None,
            locations=list(sites),
        )
    ]


def performance_section(report: dict[str, Any]) -> dict[str, Any]:
    """``{"steps": [...], "findings": [...]}`` for the emulated run's report."""
    _check_rows()
    procs = [p for p in report.get("perf") or [] if isinstance(p, dict)]
    findings = (
        _host_syncs(report, procs)
        + _fallbacks(report)
        + _shapes(procs)
        + _collectives(procs)
        + _optimizers(procs)
        + _compiled(procs)
    )
    steps = [
        {"rank": p.get("rank"), "step": k, **s} for p in procs for k, s in enumerate(p.get("steps") or [])
    ]
    return {"steps": steps, "findings": [asdict(f) for f in findings]}


def render_section(section: dict[str, Any]) -> list[str]:
    """Text lines of the section for the run's stderr report (the report escapes them)."""
    lines = []
    for f in section["findings"]:
        lines.append(f"{f['id']} {f['name']}: {f['message']}")
        lines.append(f"    fix{' [' + f['rule'] + ']' if f['rule'] else ''}: {f['fix']}")
        lines += [f"    at {loc}" for loc in f["locations"][:5]]
    steps = len({(s.get("rank"), s.get("step")) for s in section["steps"]})
    if lines:
        lines.insert(
            0, "performance (the same findings `migrate perf` reports from a profile of the real run):"
        )
    else:
        lines.append(
            f"performance: nothing to change found in {steps} step(s) "
            "(the checks of migrate perf that run here)"
        )
    return lines
