"""A torchvision detection model trained on the emulated NPU: the CPU's losses, and the
fallbacks `migrate ops --torch --train` lists for the same step (torchvision's nms and
roi_align have no NPU kernel in torch_npu). Needs torchvision (the torch 2.14 CI job)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

pytest.importorskip("torchvision")

# On the torch torch_npu pins too (.ci/run's torch 2.14 job runs -m pinned_torch).
pytestmark = pytest.mark.pinned_torch

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


migrate = partial(run_migrate, cwd=HERE)


def test_detection_step_on_the_emulated_npu(tmp_path):
    import detection_model

    out = tmp_path / "losses.json"
    code = "import json, sys, detection_model; json.dump(detection_model.step('npu'), open(sys.argv[1], 'w'))"
    run = migrate("run", "--report", str(tmp_path / "r.json"), "--", "python", "-c", code, str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got == pytest.approx(detection_model.step("cpu"), rel=1e-5)
    report = json.loads((tmp_path / "r.json").read_text())
    emulated = {f["op"] for f in report["findings"] if f["kind"] == "cpu_fallback"}
    ops = migrate("ops", "--torch", "detection_model:build", "--train", "--format", "json")
    assert ops.returncode in (0, 1), ops.stderr[-2000:]
    listed = {r["op"] for r in json.loads(ops.stdout)["ops"] if r["status"] == "cpu-fallback"}
    assert {"torchvision::nms", "torchvision::roi_align"} <= emulated
    assert emulated == listed
