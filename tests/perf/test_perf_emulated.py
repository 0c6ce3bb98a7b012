"""The performance section of `migrate run --emulate npu`: the same finding IDs and fixes as
`migrate perf`, from what the emulated run saw per step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.perf.catalog import catalog, make
from migrate.perf.emulated import EMULATED_IDS, performance_section

ROOT = Path(__file__).resolve().parents[2]

LOOP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to("npu")
opt = OPTIMIZER
for step in range(6):
    n = 8 if step < 4 else 5  # a last, smaller batch
    x = torch.randn(n, 16, device="npu")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    SYNC
"""


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def emulated(tmp_path: Path, source: str) -> dict:
    script = tmp_path / "loop.py"
    script.write_text(source, encoding="utf-8")
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "run",
            "--emulate",
            "npu",
            "--report",
            str(report),
            "--",
            sys.executable,
            str(script),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "performance" in proc.stderr
    return {**json.loads(report.read_text()), "source": source}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    pytest.importorskip("torch")
    source = LOOP.replace("OPTIMIZER", "torch.optim.AdamW(model.parameters())").replace(
        "SYNC", "print(loss.item())  # a host sync per step"
    )
    return emulated(tmp_path_factory.mktemp("plain"), source)


def by_id(report: dict) -> dict[str, dict]:
    return {f["id"]: f for f in report["performance"]["findings"]}


def test_host_syncs_per_step_with_the_line(plain):
    f = by_id(plain)["PERF202"]
    assert f["evidence"]["per_step"] and set(f["evidence"]["per_step"]) == {1}
    line = line_of(plain["source"], "loss.item()")
    assert any(loc.endswith(f"loop.py:{line}") for loc in f["locations"]), f["locations"]
    assert f["saving_us"] is None
    assert f["fix"] == make("PERF202", "", {}, None).fix  # the fix `migrate perf` gives


def test_a_shape_that_changes_between_steps_is_a_compilation_risk(plain):
    f = by_id(plain)["PERF102"]
    assert "aten::addmm" in f["evidence"]["changing_shapes"]
    line = line_of(plain["source"], "model(x)")
    assert any(loc.endswith(f"loop.py:{line}") for loc in f["locations"]), f["locations"]
    assert f["rule"] == "MIG906"


def test_the_optimizer_has_its_fused_counterpart(plain):
    f = by_id(plain)["PERF105"]
    assert f["evidence"] == {"optimizer": "AdamW", "steps": 6}
    assert "torch_npu.optim.NpuFusedAdamW" in f["fix"] and f["rule"] == "MIG901"


def test_per_step_counts_are_recorded(plain):
    steps = [s for s in plain["performance"]["steps"] if s["step"] >= 1]
    assert len(steps) == 6  # six optimizer steps: steps 1..5 complete, the last one partial
    assert all(s["ops"] > 0 for s in steps[:-1])


def test_a_tuned_loop_has_no_such_findings(tmp_path):
    pytest.importorskip("torch")
    source = "import torch_npu\ntorch_npu.npu.set_compile_mode(jit_compile=False)\n" + LOOP.replace(
        "OPTIMIZER", "torch_npu.optim.NpuFusedAdamW(model.parameters())"
    ).replace("SYNC", "pass")
    got = by_id(emulated(tmp_path, source))
    assert not {"PERF102", "PERF105", "PERF202"} & set(got), got


def test_every_emulated_id_is_a_catalog_row_from_emulate():
    for finding_id in EMULATED_IDS:
        assert "emulate" in catalog()[finding_id].sources


def test_the_section_of_a_report_with_collectives_and_fallbacks():
    report = {
        "findings": [
            {
                "kind": "cpu_fallback",
                "op": "aten::special_zeta",
                "site": "m.py:3",
                "count": 4,
                "reason": "no kernel",
            }
        ],
        "perf": [
            {
                "rank": "0",
                "steps": [{"ops": 5, "syncs": 0}] * 4,
                "collectives": {"c10d::allreduce_": {"count": 40, "bytes": 40 * 4096, "smallest": 4096}},
                "optimizers": {"SGD": 3},
                "compiled_on_npu": {"train.py:9": 1},
            }
        ],
    }
    got = by_id({"performance": performance_section(report)})
    assert got["PERF107"]["locations"] == ["m.py:3"] and got["PERF107"]["evidence"]["calls"] == 4
    assert got["PERF302"]["evidence"]["small"] == {"c10d::allreduce_": 40}
    assert got["PERF204"]["locations"] == ["train.py:9"]
    assert "PERF105" not in got  # SGD has no fused counterpart in MIG901's table


def test_host_syncs_outside_every_step_cost_no_step():
    """FSDP2's example saves its checkpoint after the loop: 375 copies to the host, none in
    a training step; a sync in one step of the loop is a cost per step again."""
    rows = [{"kind": "host_sync", "op": "aten::_to_copy", "site": "checkpoint.py:151", "count": 375}]
    steps = [{"ops": 9, "syncs": 0}] * 11 + [{"ops": 99, "syncs": 375}]
    report = {"findings": rows, "perf": [{"rank": "0", "steps": steps}]}
    assert "PERF202" not in by_id({"performance": performance_section(report)})
    steps[5] = {"ops": 9, "syncs": 1}
    got = by_id({"performance": performance_section(report)})["PERF202"]
    assert got["evidence"]["per_step"] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
