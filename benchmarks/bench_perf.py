"""Benchmark `migrate perf` on large profiles: wall time and peak memory against
`python -m json.tool` reading the same trace (the floor of any tool that parses the JSON),
side by side in one run.

Two inputs are built from the real Ascend timeline in ../shared/data/profiles (its 3,670
events repeated as consecutive steps, ProfilerStep#N renumbered, timestamps and flow ids
shifted), under benchmarks/.work/perf/ (gitignored, reused):

* one rank whose ``trace_view.json`` is ``--size-mb`` (default 1024) MB;
* a cluster of ``--ranks`` (default 16) ranks of ``--rank-mb`` (default 64) MB each.

For each: `python -m migrate perf DIR --format json -o OUT --quiet` (this checkout first on
PYTHONPATH) and `python -m json.tool FILE` for every trace of the input, one after the
other; wall time and the peak RSS of the child (wait4's ru_maxrss). Printed: the figures and
the ratios perf/json.tool (wall, memory), and the steps perf reported (one per repeat).

    python benchmarks/bench_perf.py [--size-mb 1024] [--ranks 16] [--rank-mb 64] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "benchmarks" / ".work" / "perf"
SOURCE = REPO.parent / "shared" / "data" / "profiles" / "ascend" / "timeline_ascend_pt"


def _events() -> tuple[list[dict], Decimal]:
    events = json.loads((SOURCE / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text(encoding="utf-8"))
    stamps = [Decimal(str(e["ts"])) + Decimal(str(e.get("dur", 0))) for e in events if "ts" in e]
    starts = [Decimal(str(e["ts"])) for e in events if "ts" in e]
    return events, max(stamps) - min(starts) + Decimal(100)


def _shifted(event: dict, k: int, span: Decimal) -> dict:
    out = dict(event)
    if "ts" in out:
        out["ts"] = str(Decimal(str(out["ts"])) + span * k)
    if out.get("ph") in ("s", "f") and "id" in out:
        out["id"] = f"{out['id']}-{k}"
    name = out.get("name")
    if isinstance(name, str) and name.startswith("ProfilerStep#"):
        out["name"] = f"ProfilerStep#{k + 1}"
    return out


def build_trace(folder: Path, size_mb: int) -> Path:
    """``folder``/ASCEND_PROFILER_OUTPUT/trace_view.json of about ``size_mb`` MB."""
    path = folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    if path.exists() and path.stat().st_size >= size_mb * 1_000_000 * 0.95:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    events, span = _events()
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    tmp = path.with_suffix(".tmp")
    written, k = 0, 0
    with tmp.open("w", encoding="utf-8") as out:
        out.write("[")
        out.write(",".join(json.dumps(e) for e in meta))
        written = out.tell()
        while written < size_mb * 1_000_000:
            out.write("," + ",".join(json.dumps(_shifted(e, k, span)) for e in body))
            written = out.tell()
            k += 1
        out.write("]")
    tmp.replace(path)
    return path


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``cmd`` run to the end, its output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-400:]}")
    return wall, usage.ru_maxrss / 1024


def compare(label: str, root: Path, traces: list[Path], jobs: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "perf.json"
        perf_cmd = [sys.executable, "-m", "migrate", "perf", str(root), "-f", "json", "-o", str(out), "-q"]
        wall, rss = measure([*perf_cmd, "--jobs", str(jobs)], env)
        steps = len(json.loads(out.read_text(encoding="utf-8"))["steps"])
    tool_wall, tool_rss = 0.0, 0.0
    for trace in traces:
        w, r = measure([sys.executable, "-m", "json.tool", str(trace)], env)
        tool_wall, tool_rss = tool_wall + w, max(tool_rss, r)
    size = sum(t.stat().st_size for t in traces) / 1e6
    print(f"{label}: {len(traces)} trace(s), {size:,.0f} MB, perf reported {steps} step row(s)")
    print(f"  migrate perf   {wall:8.1f} s  peak {rss:8.0f} MB   (--jobs {jobs})")
    print(f"  json.tool      {tool_wall:8.1f} s  peak {tool_rss:8.0f} MB   (each trace in turn)")
    print(f"  ratio perf/json.tool: wall {wall / tool_wall:.2f}x, peak memory {rss / tool_rss:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--rank-mb", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if not SOURCE.is_dir():
        raise SystemExit(f"{SOURCE} not found (../shared/data/profiles beside the repository)")
    big = WORK / f"one_{args.size_mb}mb" / "rank0_ascend_pt"
    trace = build_trace(big, args.size_mb)
    compare(f"one rank, trace_view.json of {args.size_mb} MB", big, [trace], args.jobs)
    cluster = WORK / f"cluster_{args.ranks}x{args.rank_mb}mb"
    traces = [build_trace(cluster / f"rank{r}_ascend_pt", args.rank_mb) for r in range(args.ranks)]
    compare(f"cluster of {args.ranks} ranks", cluster, traces, args.jobs)


if __name__ == "__main__":
    main()
