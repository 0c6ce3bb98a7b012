"""What the Ascend readers make of the real profiles of ../shared/data/profiles/ascend, each
figure read from the file here by hand (plain csv / json, none of the package's readers).
The report-level facts (top operator, findings, the slow rank's verdict) are
tests/perf/test_perf_real_profiles.py's; these are the Timeline's: rows, events, tracks."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict

import pytest

from migrate.perf.analyze.context import RankContext
from migrate.perf.read.ascend import read_ascend
from migrate.perf.read.discover import discover

OUT = "ASCEND_PROFILER_OUTPUT"


def timeline(path):
    (src,) = discover([path])
    return read_ascend(src)


@pytest.fixture(scope="module")
def kernels(ascend_data):
    path = ascend_data / "kernels_ascend_pt"
    with open(path / OUT / "kernel_details.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows, timeline(path)


def test_kernel_details_rows_less_the_exact_duplicates(kernels):
    rows, tl = kernels
    key = lambda r: (r["Stream ID"], r["Start Time(us)"].strip(), r["Name"])  # noqa: E731
    assert len(rows) == 29 and len({key(r) for r in rows}) == 26
    (dupe, n), *_ = Counter(map(key, rows)).most_common(1)
    assert n == 4 and len({tuple(r.values()) for r in rows if key(r) == dupe}) == 1  # one row written 4 times
    assert len(tl.device_ops) == 26
    assert any(n.startswith("kernel_details.csv: 3 duplicate row(s)") for n in tl.notes)
    assert {op.step for op in tl.device_ops} == {int(r["Step Id"]) for r in rows} == {19}
    assert {op.state for op in tl.device_ops} == {r["OP State"] for r in rows} == {"dynamic"}


def test_kernel_details_device_time_per_core_and_the_top_op(kernels):
    rows, tl = kernels
    unique = {(r["Stream ID"], r["Start Time(us)"].strip(), r["Name"]): r for r in rows}.values()
    by_core, by_type = defaultdict(float), defaultdict(float)
    for r in unique:
        by_core[r["Accelerator Core"]] += float(r["Duration(us)"])
        by_type[r["Type"]] += float(r["Duration(us)"])
    got_core, got_type = defaultdict(float), defaultdict(float)
    for op in tl.device_ops:
        got_core[op.core] += op.dur
        got_type[op.type] += op.dur
    assert got_core == pytest.approx(dict(by_core), abs=1e-6)
    assert got_type == pytest.approx(dict(by_type), abs=1e-6)
    assert max(got_type, key=got_type.get) == "FlashAttentionScoreGrad"
    total = sum(by_core.values())
    assert got_core["AI_VECTOR_CORE"] / total == pytest.approx(by_core["AI_VECTOR_CORE"] / total)
    assert set(got_core) == {"AI_CORE", "MIX_AIC", "AI_VECTOR_CORE"}
    first = rows[0]
    (op,) = [o for o in tl.device_ops if o.name == first["Name"] and o.dur == float(first["Duration(us)"])]
    assert (op.shapes, op.dtypes) == (first["Input Shapes"].strip('"'), first["Input Data Types"])
    assert (op.shapes, op.dtypes) == ("81920,4096;8192,512", "DT_BF16;DT_BF16")


@pytest.fixture(scope="module")
def trace(ascend_data):
    path = ascend_data / "timeline_ascend_pt"
    events = json.loads((path / OUT / "trace_view.json").read_text())
    procs = {
        e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    return events, procs, timeline(path)


def test_trace_view_host_ops_steps_and_syncs(trace):
    events, procs, tl = trace
    host = Counter(op.name for op in tl.host_ops)
    assert host["aten::item"] == host["aten::_local_scalar_dense"] == 45
    python = [e for e in events if procs.get(e.get("pid")) == "Python" and e.get("ph") == "X"]
    cann = [e for e in events if procs.get(e.get("pid")) == "CANN" and e.get("ph") == "X"]
    assert len(tl.host_ops) == len(python) + len(cann) == 711 + 148 * 2 + 382
    (step,) = tl.steps
    mark = next(e for e in python if e["name"] == "ProfilerStep#1")
    assert step.id == 1 and step.end - step.start == pytest.approx(mark["dur"], abs=1e-6)
    assert tl.facts["task_queue"] is True  # 148 enqueue / dequeue pairs


def test_trace_view_tasks_their_launches_and_the_ai_cpu_casts(trace):
    events, procs, tl = trace
    tasks = [e for e in events if procs.get(e.get("pid")) == "Ascend Hardware" and e.get("ph") == "X"]
    assert len(tl.device_ops) == len(tasks) == 276  # no waits, no collectives in this run
    flows = [e for e in events if e.get("ph") == "f" and e.get("cat") == "async_npu"]
    launched = [i for i in range(len(tl.device_ops)) if tl.device_ops.cols["launch"][i] in tl.launches]
    assert len(launched) == len(flows) == 274
    aicpu = sorted(op.name for op in tl.device_ops if op.core == "AI_CPU")
    assert aicpu == sorted(e["name"] for e in tasks if e["args"].get("Task Type") == "AI_CPU")
    assert aicpu == ["aclnnCast_CastAiCpu_Cast", "aclnnReduceSum_CastAiCpu_Cast"]
    ctx = RankContext(tl)
    by_name = {tl.device_ops.get(d).name: tl.host_ops.get(h).name for d, h in ctx.launcher.items()}
    assert by_name["aclnnReduceSum_CastAiCpu_Cast"] == "aten::sum"


def test_trace_view_overlap_tracks_are_the_step_breakdown(trace):
    events, procs, tl = trace
    want = defaultdict(float)
    for e in events:
        if procs.get(e.get("pid")) == "Overlap Analysis" and e.get("ph") == "X":
            want[e["name"]] += e["dur"]
    got = defaultdict(float)
    for i in range(len(tl.overlap)):
        got[tl.strings[tl.overlap.cols["kind"][i]]] += tl.overlap.cols["dur"][i]
    assert got == pytest.approx(dict(want), abs=1e-6)
    assert got["Computing"] == pytest.approx(1788.25, abs=0.01) and got["Free"] == pytest.approx(
        9481.67, abs=0.01
    )
    assert got.get("Communication", 0.0) == 0.0 and "communication" not in tl.tables  # no HCCL in this run


def test_the_cluster_slow_rank_by_msprof_analyzes_own_rule(ascend_data):
    """msprof-analyze's SlowRankAnalyzer, applied here by hand: a dimension is an issue when
    its max - min over the ranks exceeds 5% of the mean step time; the rank with the most
    free time is the one it analyses. It names rank 1, as PERF304 does."""
    from migrate.perf.run import PerfRequest, analyze

    path = ascend_data / "cluster_analysis_output"
    with open(path / "cluster_step_trace_time.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Type"] == "rank"]
    dims = {
        d: {int(r["Index"]): float(r[d]) for r in rows}
        for d in ("Computing", "Communication(Not Overlapped)", "Free")
    }
    mean = sum(sum(v[k] for v in dims.values()) for k in dims["Free"]) / len(rows)
    issues = {d for d, v in dims.items() if (max(v.values()) - min(v.values())) / mean > 0.05}
    assert issues == {"Communication(Not Overlapped)", "Free"}  # computing is even across ranks
    slow = max(dims["Free"], key=dims["Free"].get)
    (f,) = [f for f in analyze(PerfRequest([path])).findings if f.id == "PERF304"]
    assert f.evidence["slow_rank"] == slow == 1 and f.evidence["bottleneck"] == "free"
    assert f.evidence["step_share"] > 0.05
