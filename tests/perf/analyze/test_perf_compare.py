"""`--ref`: the run beside its reference, per step and rank: breakdowns, operators matched by
framework op (backend names folded) ranked by the time lost, collectives, the step ratio."""

from __future__ import annotations

import pytest

from migrate.perf.analyze.compare import compare_sides
from migrate.perf.analyze.op_aliases import AliasTableError, aliases, fold
from migrate.perf.model import ProfileInfo, RankResult, StepBreakdown
from migrate.perf.run import PerfRequest, Side, analyze, read_side


def _rank(steps: list[float], ops: dict[str, list[float]], rank=0, kind="kineto") -> RankResult:
    profile = ProfileInfo(f"p{rank}", kind, "gpu", [rank])
    rows = [StepBreakdown(rank, k, t, t / 2, 0.0, t / 2) for k, t in enumerate(steps)]
    return RankResult(profile, rank, rows, [], [], [], framework_ops=ops)


def _side(*ranks: RankResult) -> Side:
    return Side(list(ranks), [], [r.profile for r in ranks])


def test_figures_are_per_step_and_names_are_folded():
    run = _side(_rank([1000.0, 1000.0], {"aten::mm": [4, 400.0], "aten::_convolution": [2, 300.0]}))
    ref = _side(_rank([500.0], {"aten::mm": [1, 100.0], "aten::cudnn_convolution": [1, 100.0]}))
    got = compare_sides(run, ref)
    assert got["step_ratio"] == pytest.approx(2.0)
    ops = {row["op"]: row for row in got["ops"]}
    assert ops["aten::mm"]["us"] == 200.0 and ops["aten::mm"]["ref_us"] == 100.0
    assert ops["aten::convolution"]["lost_us"] == 50.0  # 150 per step vs 100: one row, not two
    assert [row["op"] for row in got["ops"]] == ["aten::mm", "aten::convolution"]  # most lost first
    assert got["breakdown"]["total_us"] == 1000.0 and got["ref_breakdown"]["free_us"] == 250.0


def test_a_run_against_itself_loses_nothing(profiles):
    path = profiles / "gpu" / "alexnet_a100_trace.json.gz"
    report = analyze(PerfRequest([path], ref=[path], flops=1e12))
    c = report.compare
    assert c["step_ratio"] == 1.0
    assert c["ops"] and all(row["lost_us"] == 0 for row in c["ops"])
    assert c["mfu"]["mfu"] == c["ref_mfu"]["mfu"] > 0


def test_two_real_nccl_runs_compare_their_collectives(profiles):
    run = read_side([profiles / "gpu" / "nccl_data.json.gz"])
    gpu = profiles / "gpu"
    ref = read_side([gpu / "sampled_rank-0.json.gz", gpu / "sampled_rank-1.json.gz"])
    got = compare_sides(run, ref)
    names = {row["collective"] for row in got["collectives"]}
    assert names, "the NCCL runs' collectives are compared"
    mine = sum(r.mean_step_us for r in run.ranks) / len(run.ranks)
    assert got["breakdown"]["total_us"] == pytest.approx(mine, rel=1e-3)
    assert got["step_ratio"] == pytest.approx(got["breakdown"]["total_us"] / got["ref_breakdown"]["total_us"])


def test_the_regression_gate_uses_the_step_ratio(profiles):
    path = profiles / "gpu" / "alexnet_a100_trace.json.gz"
    same = analyze(PerfRequest([path], ref=[path], fail_on={"regression": 0.0}))
    assert same.gate["failed"] is False


def test_the_alias_table_loads_and_refuses_chains(tmp_path):
    assert fold("aten::cudnn_convolution") == fold("aten::_convolution") == "aten::convolution"
    assert fold("aten::mm") == "aten::mm"
    bad = tmp_path / "a.yaml"
    bad.write_text("aliases:\n  a::x: a::y\n  a::y: a::z\n", encoding="utf-8")
    with pytest.raises(AliasTableError, match="folded again"):
        aliases.__wrapped__(bad)
    bad.write_text("aliases:\n  conv: a::y\n", encoding="utf-8")
    with pytest.raises(AliasTableError, match="not an op name"):
        aliases.__wrapped__(bad)
