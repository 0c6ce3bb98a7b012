"""The emulated run's report (docs/contracts.md §7): one JSON document per run, merged from
the per-process parts, and its text rendering."""

from __future__ import annotations

import json
from pathlib import Path

from migrate.core.display import escape

MAX_PART_BYTES = 64 * 1024 * 1024  # one process's part: ops and findings, never this big
MAX_VIA = 5  # a finding's library lines, as migrate ops --torch keeps a row's (MAX_LOCATIONS)
KINDS = {
    "unsupported": "no NPU kernel and no CPU fallback (fails on the NPU)",
    "cpu_fallback": "no NPU kernel (runs on the CPU through torch_npu's fallback)",
    "dtype": "dtype NPU kernels lack",
    "host_sync": "host sync",
}


def add_via(row: dict, via: str) -> None:
    """``via`` (an installed library's ``file:line`` inside the user's call at the finding's
    site) added to the finding's ``via`` list: each once, at most MAX_VIA."""
    got = row.setdefault("via", [])
    if isinstance(got, list) and via not in got and len(got) < MAX_VIA:
        got.append(via)


def part(
    rec,
    rank: str,
    command: list[str],
    torch_version: str,
    target: str,
    end: dict | None = None,
    worker: bool = False,
) -> dict:
    """One process's findings; ``torch`` as ``migrate ops --torch`` reports it (the torch this
    process ran, the torch the judged torch_npu requires, whether they match); ``end`` how
    the process ended (activate.PartWriter), None while it runs; ``worker``: a
    multiprocessing worker."""
    import os

    from migrate.ops.aten.judge import JUDGED_FOR
    from migrate.ops.versions import torch_versions

    return {
        "pid": os.getpid(),
        "end": end,
        "worker": worker,
        "rank": rank,
        "command": command,
        "target": target,
        "judged_for": JUDGED_FOR,
        "torch": {**torch_versions(rec.judge.reg, torch_version), "build": torch_version},
        "ops": dict(sorted(rec.ops.items())),
        "threads": dict(sorted(rec.threads.items())),
        "findings": list(rec.findings.values()),
        "notes": list(rec.notes),
        "perf": rec.perf.to_json(),
    }


def merge(parts: list[dict], command: list[str], exit_code: int, main_pid: int | None = None) -> dict:
    """The run's report from its processes' parts; ``main_pid`` is the process the command
    started (its end is ``exit_code``): every other process that failed is counted and
    named in a note."""
    findings: dict[tuple, dict] = {}
    ops: dict[str, int] = {}
    threads: dict[str, int] = {}
    notes: list[str] = []
    first = parts[0] if parts else {}
    # A part's torch as part() writes it; anything else (another tool version's part, or
    # one written over) gives the report no torch line rather than ending it.
    versions = first.get("torch")
    if not (isinstance(versions, dict) and {"matches", "used", "registry_requires"} <= versions.keys()):
        versions = None
    if versions:
        from migrate.ops.versions import mismatch_advice

        mismatch = mismatch_advice(versions, str(first.get("target")), "emulated", "run the emulation")
        notes += [mismatch] if mismatch else []
    for p in parts:
        for op, n in p["ops"].items():
            ops[op] = ops.get(op, 0) + n
        for name, n in _threads(p).items():
            threads[name] = threads.get(name, 0) + n
        for row in p["findings"]:
            key = (row["kind"], row["op"], row["dtype"], row["module"], row["site"], row.get("thread"))
            if key in findings:
                findings[key]["count"] += row["count"]
                findings[key]["ranks"].append(p["rank"])
            else:
                findings[key] = {**row, "ranks": [p["rank"]]}
                findings[key].pop("via", None)
            vias = row.get("via")
            for via in vias if isinstance(vias, list) else ():
                if isinstance(via, str):
                    add_via(findings[key], via[:500])
        notes += [n for n in p["notes"] if n not in notes]
    failed = [p for p in parts if p.get("pid") != main_pid and _failure(p)]
    notes += [_failure_note(p) for p in failed[:MAX_FAILED_NOTES]]
    if len(failed) > MAX_FAILED_NOTES:
        notes.append(f"{len(failed) - MAX_FAILED_NOTES} more processes failed")
    rows = sorted(findings.values(), key=lambda r: (list(KINDS).index(r["kind"]), r["op"], r["site"]))
    perf = [
        {"rank": p.get("rank"), "pid": p.get("pid"), **p["perf"]}
        for p in parts
        if isinstance(p.get("perf"), dict)
    ]
    summary = {k: sum(1 for r in rows if r["kind"] == k) for k in KINDS}
    return {
        "tool": "ascend-migrate",
        "emulate": "npu",
        "command": command,
        "exit_code": exit_code,
        "torch": versions,
        "target": first.get("target"),
        "judged_for": first.get("judged_for"),
        "processes": len(parts),
        "ops": dict(sorted(ops.items())),
        "threads": dict(sorted(threads.items())),
        "findings": rows,
        "notes": notes,
        "perf": perf,
        "summary": {**summary, "npu_ops": sum(ops.values()), "failed_processes": len(failed)},
    }


MAX_FAILED_NOTES = 10


def _threads(p: dict) -> dict[str, int]:
    """A part's NPU ops per thread other than the main one (none in an older part)."""
    got = p.get("threads")
    if not isinstance(got, dict):
        return {}
    return {str(k)[:200]: v for k, v in got.items() if isinstance(v, int) and not isinstance(v, bool)}


def _failure(p: dict) -> str | None:
    """Why a process failed, or None. Only processes of the computation count: one that ran
    ops on the NPU or a multiprocessing worker (not a probe such as ``python -c "import
    apex"`` whose failure its parent expects). A failure: a non-zero exit code or an
    exception ended it, or it has no end (cut short). SIGTERM is how parents stop their
    workers (DataLoader, multiprocessing pools, torchrun): not a failure. A part written
    before ends were recorded (no ``end`` key) says nothing."""
    if "end" not in p:
        return None
    end = p["end"]
    if not (p.get("ops") or p.get("findings") or p.get("worker") is True):
        return None
    if end is None:
        return (
            "ended before it could say how (SIGKILL, a crash in native code, or still "
            "running when the program ended)"
        )
    if not isinstance(end, dict):
        return None
    code, exc = end.get("exit_code"), end.get("exception")
    what = []
    if isinstance(code, int) and not isinstance(code, bool) and code != 0 and -(2**31) <= code < 2**31:
        what.append(f"exited with code {code}")
    if isinstance(exc, str) and exc:
        what.append(f"raised {exc[:300]}")
    return ", ".join(what) or None


def _failure_note(p: dict) -> str:
    command = p.get("command")
    shown = " ".join(str(a) for a in command[:4]) if isinstance(command, list) else "?"
    pid, rank = str(p.get("pid"))[:20], str(p.get("rank"))[:20]
    return f"process {pid} (rank {rank}: {shown[:200]}) {_failure(p)}"


def read_parts(folder: Path) -> list[dict]:
    """Every process's part; one that cannot be read (the process died mid-way, or wrote
    something else there) is left out rather than ending the report."""
    from migrate.core.fileio import SourceError, read_bytes

    parts = []
    for p in sorted(folder.glob("part-*.json")):
        try:
            doc = json.loads(read_bytes(p, MAX_PART_BYTES)[0])
        except (SourceError, ValueError, RecursionError):
            continue
        if (
            isinstance(doc, dict)
            and isinstance(doc.get("ops"), dict)
            and isinstance(doc.get("findings"), list)
            and isinstance(doc.get("notes"), list)
        ):
            parts.append(doc)
    return parts


def render_text(report: dict, section: list[str] | None = None) -> str:
    """The report as text; ``section``: lines shown after the findings and notes, before the
    closing summary (the performance section the command adds)."""
    lines = []
    s = report["summary"]
    for row in report["findings"]:
        what = row["op"] + (f" [{row['dtype']}]" if row["dtype"] else "")
        thread = f" (thread {row['thread']})" if row.get("thread") else ""
        via = f" via {', '.join(row['via'])}" if row.get("via") else ""
        lines.append(
            f"{row['site']}: {row['kind']}: {what} in {row['module']}{thread} (x{row['count']}){via}: "
            f"{row['reason']}"
        )
    lines += [f"note: {n}" for n in report["notes"]]
    if report.get("threads"):
        lines.append(
            "ops on npu in threads other than the main one: "
            + ", ".join(f"{name} {n}" for name, n in report["threads"].items())
        )
    lines += section or []
    ran = (report.get("torch") or {}).get("build")
    if report.get("target"):
        lines.append(
            f"judged for {report['target']} on {report['judged_for']}"
            + (f"; ran on torch {ran}" if ran else "")
        )
    failing = f"{s['unsupported']} failing on the NPU, " if s.get("unsupported") else ""
    lines.append(
        f"emulated NPU run: {s['npu_ops']} ops on npu in {report['processes']} "
        f"process(es); {failing}{s['cpu_fallback']} without an NPU kernel, {s['dtype']} "
        f"unsupported-dtype uses, {s['host_sync']} host syncs; "
        + (f"{s['failed_processes']} other process(es) failed; " if s.get("failed_processes") else "")
        + f"exit code {report['exit_code']}"
    )
    return "\n".join(escape(line) for line in lines)
