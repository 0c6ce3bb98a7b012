"""`migrate perf` on the real profiles of ../shared/data/profiles: each figure checked against
the file read here by hand (plain json/csv, no reader of the package), or against what its
README says of it."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from migrate.perf.model import Report
from migrate.perf.run import PerfRequest, analyze


def run(*paths: Path) -> Report:
    return analyze(PerfRequest(list(paths)))


def finding(report: Report, fid: str):
    got = [f for f in report.findings if f.id == fid]
    assert got, f"no {fid} in {[f.id for f in report.findings]}"
    return got[0]


# -- the Ascend timeline (trace_view.json only) ----------------------------------------------


@pytest.fixture(scope="module")
def timeline(profiles):
    path = profiles / "ascend" / "timeline_ascend_pt"
    events = json.loads((path / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    return path, events, run(path)


def test_the_step_breakdown_is_the_overlap_tracks_of_the_step(timeline):
    _, events, report = timeline
    overlap_pid = next(
        e["pid"]
        for e in events
        if e.get("name") == "process_name" and e["args"]["name"] == "Overlap Analysis"
    )
    sums = Counter()
    for e in events:
        if e.get("pid") == overlap_pid and e.get("ph") == "X":
            sums[e["name"]] += e["dur"]
    (step,) = report.steps
    assert step.step == 1 and step.source == "overlap tracks"
    assert step.computing_us == pytest.approx(sums["Computing"], abs=1e-3)  # 1788.25
    assert step.free_us == pytest.approx(sums["Free"], abs=1e-3)  # 9481.67
    assert step.communication_not_overlapped_us == 0
    assert step.total_us == pytest.approx(sums["Computing"] + sums["Free"], abs=1e-3)
    assert step.free_share == pytest.approx(0.8413, abs=1e-4)


def test_the_host_bound_step_is_a_finding_with_its_free_time(timeline):
    *_, report = timeline
    f = finding(report, "PERF201")
    assert f.saving_us == pytest.approx(9481.667, abs=1e-3)
    assert "84.1%" in f.message


def test_host_syncs_are_the_item_calls_counted_once(timeline):
    _, events, report = timeline
    items = sum(1 for e in events if e.get("name") == "aten::item")
    dense = sum(1 for e in events if e.get("name") == "aten::_local_scalar_dense")
    assert items == dense == 45  # the README: 45 aten::item / _local_scalar_dense
    f = finding(report, "PERF202")
    assert f.evidence["per_step"] == [45]
    assert f.evidence["ops"] == {"item": 45}


def test_the_two_ai_cpu_casts(timeline):
    _, events, report = timeline
    aicpu = [e for e in events if e.get("args", {}).get("Task Type") == "AI_CPU"]
    assert sorted(e["name"] for e in aicpu) == ["aclnnCast_CastAiCpu_Cast", "aclnnReduceSum_CastAiCpu_Cast"]
    f = finding(report, "PERF101")
    assert f.evidence["ops"] == [
        {"type": "Cast", "count": 2, "total_us": pytest.approx(sum(e["dur"] for e in aicpu), abs=1e-3)}
    ]
    assert "aten::sum" in f.evidence["launched_by"]  # the ReduceSum's cast, launched by aten::sum


def test_operator_compilation_and_the_unfused_adam(timeline):
    _, events, report = timeline
    compiles = [e for e in events if e.get("name") == "AscendCL@aclopCompileAndExecute"]
    f = finding(report, "PERF102")
    assert f.evidence["compilations"] == len(compiles) == 11
    assert f.rule == "MIG906"
    adam = next(e for e in events if e.get("name") == "Optimizer.step#Adam.step")
    f = finding(report, "PERF105")
    assert f.saving_us == pytest.approx(adam["dur"], abs=1e-3)
    assert f.rule == "MIG901" and "NpuFusedAdam" in f.fix


@pytest.mark.parametrize("mark", ["FSDP::pre_forward (layers.0)", "FullyShardedDataParallel._pre_forward"])
def test_no_fused_optimizer_advice_where_fsdp_shards_the_parameters(timeline, tmp_path, mark):
    """The same timeline with one of FSDP's host marks (the names a CPU fully_shard run
    records; FSDP1's) beside the forward: torch_npu's fused optimizers take no sharded
    parameters, so the Adam step is no finding; the other findings stay."""
    path, events, plain = timeline
    first = min((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: float(e["ts"]))
    marked = [*events, {**first, "name": mark, "dur": 1.0, "args": {}}]
    out = tmp_path / "fsdp_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(json.dumps(marked))
    got = {f.id for f in run(out.parent).findings}
    assert "PERF105" not in got
    assert got == {f.id for f in plain.findings} - {"PERF105"}


def test_every_finding_names_its_catalog_row_and_the_saving_fits_the_step(timeline):
    *_, report = timeline
    step = report.steps[0].total_us
    for f in report.findings:
        assert f.id.startswith("PERF") and f.fix and f.message
        assert f.saving_us is None or 0 <= f.saving_us <= step + 1e-6


# -- the Ascend kernel list (kernel_details.csv only) -----------------------------------------


def test_kernel_details_top_ops_and_duplicates(profiles):
    path = profiles / "ascend" / "kernels_ascend_pt"
    with open(path / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    unique = {(r["Stream ID"], r["Start Time(us)"].strip(), r["Name"]): r for r in rows}
    assert len(rows) == 29 and len(unique) == 26
    by_type = Counter()
    for r in unique.values():
        by_type[(r["Type"], r["Accelerator Core"])] += float(r["Duration(us)"])
    total = sum(by_type.values())
    report = run(path)
    top = report.top_ops[0]
    (want_type, want_core), want_us = by_type.most_common(1)[0]
    assert (top.type, top.core, top.total_us) == (want_type, want_core, pytest.approx(want_us, abs=1e-3))
    assert top.type == "FlashAttentionScoreGrad"
    vector = sum(o.total_us for o in report.top_ops if o.core == "AI_VECTOR_CORE")
    assert vector / total == pytest.approx(by_type[("Add", "AI_VECTOR_CORE")] / total)
    assert any("3 duplicate row(s)" in n for n in report.to_json()["notes"])


def test_a_kernel_list_alone_is_never_called_host_bound(profiles):
    report = run(profiles / "ascend" / "kernels_ascend_pt")
    assert report.steps[0].source == "kernel list"
    assert not [f for f in report.findings if f.id == "PERF201"]


def test_aclnn_kernels_marked_dynamic_are_not_a_dynamic_shape_finding(profiles):
    """Every row says OP State "dynamic" (aclnn binary kernels): no recompilation, so no
    PERF102 (msprof-analyze 26.2 reports "all operators are dynamic shape" here)."""
    report = run(profiles / "ascend" / "kernels_ascend_pt")
    assert not [f for f in report.findings if f.id == "PERF102"]


# -- msprof-analyze's cluster output ------------------------------------------------------------


def test_the_slow_rank_of_the_cluster(profiles):
    path = profiles / "ascend" / "cluster_analysis_output"
    with open(path / "cluster_step_trace_time.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Type"] == "rank"]
    work = {int(r["Index"]): float(r["Computing"]) + float(r["Free"]) for r in rows}
    slowest = max(work, key=work.get)
    report = run(path)
    f = finding(report, "PERF304")
    assert f.evidence["slow_rank"] == slowest == 1
    assert f.evidence["bottleneck"] == "free"
    assert not [f for f in report.findings if f.id == "PERF305"]  # two ranks, HCCS 2.70 vs 2.69 GB/s


# -- Kineto traces (A100) --------------------------------------------------------------------------


def test_kineto_nccl_job_steps_and_allreduce(profiles):
    path = profiles / "gpu" / "nccl_data.json.gz"
    doc = json.load(gzip.open(path))
    steps = {
        e["name"]: (e["ts"], e["ts"] + e["dur"])
        for e in doc["traceEvents"]
        if e.get("name", "").startswith("ProfilerStep#")
    }
    report = run(path)
    assert [s.step for s in report.steps] == [4, 5, 6]
    assert {p.chip for p in report.profiles} == {"NVIDIA A100-PG509-200"}
    assert report.ranks[0].rank == 0
    launches = {
        e["args"]["correlation"]: e["ts"] for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"
    }
    in_steps = [
        e
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel"
        and e["name"].startswith("ncclKernel_AllReduce")
        and any(a <= launches.get(e["args"]["correlation"], -1) < b for a, b in steps.values())
    ]
    allreduce = report.ranks[0].collectives["allreduce"]
    assert allreduce[0] == len(in_steps) == 15
    assert report.ranks[0].collectives["broadcast"][0] == 6
    assert allreduce[1] == pytest.approx(sum(e["dur"] for e in in_steps), abs=1e-2)
    for s in report.steps:
        assert s.total_us == pytest.approx(
            s.computing_us + s.communication_not_overlapped_us + s.free_us, abs=1e-2
        )
        assert 0 < s.communication_not_overlapped_us <= s.communication_us


def test_kineto_ranks_are_read_from_distributed_info(profiles):
    report = run(profiles / "gpu" / "sampled_rank-0.json.gz", profiles / "gpu" / "sampled_rank-1.json.gz")
    assert sorted(r.rank for r in report.ranks) == [0, 1]
    assert [s.step for s in report.steps if s.rank == 1] == [551, 552]


def test_a_trace_without_step_marks_is_one_step_and_says_so(profiles):
    report = run(profiles / "gpu" / "alexnet_a100_trace.json.gz")
    assert [s.step for s in report.steps] == [None]
    assert any("no ProfilerStep marks" in n for n in report.to_json()["notes"])
    f = finding(report, "PERF201")
    assert "no ProfilerStep marks" in f.message


def test_the_whole_folder_reads_every_profile(profiles):
    report = run(profiles)
    kinds = Counter(p.kind for p in report.profiles)
    assert kinds == {"kineto": 4, "ascend": 2, "cluster": 1}


def test_profiles_of_several_runs_are_not_made_one_cluster(profiles):
    report = run(profiles)
    assert any("not one run" in n for n in report.to_json()["notes"])
    assert [r.rank for r in report.ranks if r.profile.kind == "ascend"] == [None, None]  # no made-up numbers
    cluster_ids = {f.id for f in report.findings if f.kind == "cluster"}
    assert cluster_ids == {"PERF304"}  # from msprof-analyze's cluster output only
