"""`migrate perf` on Kineto traces recorded here: a CPU training loop whose steps, host syncs
and optimizer are known (conftest.TRAIN: 3 profiled steps, 2 loss.item() per step)."""

from __future__ import annotations

import json

import pytest

from migrate.perf.run import PerfRequest, analyze


@pytest.fixture(scope="module")
def report(cpu_trace):
    return analyze(PerfRequest([cpu_trace]))


def test_a_cpu_run_has_its_profiled_steps_and_op_time(report, cpu_trace):
    doc = json.loads(cpu_trace.read_text())
    marks = sorted(
        (e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    assert len(report.steps) == len(marks) == 3
    for step, mark in zip(report.steps, marks, strict=True):
        assert step.step == int(mark["name"].split("#")[1])
        assert step.total_us == pytest.approx(mark["dur"], rel=1e-6)  # a CPU step is its host window
        assert 0 < step.computing_us < step.total_us
    assert report.profiles[0].device == "cpu"
    assert {o.core for o in report.top_ops} == {"CPU"}
    assert any(
        o.type == "aten::mm" or o.type == "aten::addmm" or o.type == "aten::linear" for o in report.top_ops
    )


def test_host_syncs_per_step_and_their_source_function(report, cpu_trace):
    doc = json.loads(cpu_trace.read_text())
    marks = sorted(
        (e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    items = [e for e in doc["traceEvents"] if e.get("name") == "aten::item"]
    per_step = [sum(1 for e in items if m["ts"] <= e["ts"] < m["ts"] + m["dur"]) for m in marks]
    # the loop's 2 loss.item() calls, and Adam's step counters read with .item() (one per
    # parameter: torch.optim.adam's _get_value when not capturable)
    assert per_step == [2 + 4] * 3
    (f,) = [f for f in report.findings if f.id == "PERF202"]
    assert f.evidence["per_step"] == per_step
    assert f.evidence["ops"] == {"item": sum(per_step)}
    # Kineto's Python frames name the function's first line: train_step's def
    assert any(loc.startswith("train_tiny.py:") for loc in f.locations), f.locations
    src = next(loc for loc in f.locations if loc.startswith("train_tiny.py:"))
    line = int(src.split(":")[1])
    assert "def train_step" in (report.profiles and _script_line(report, line))


def _script_line(report, line: int) -> str:
    from pathlib import Path

    script = Path(report.profiles[0].path).parent.parent / "train_tiny.py"
    return script.read_text().splitlines()[line - 1]


def test_cpu_runs_get_no_device_advice(report):
    """Free time, fused optimizers and casts are accelerator findings: not on a CPU run."""
    assert not {f.id for f in report.findings} & {"PERF201", "PERF105", "PERF103", "PERF101"}
