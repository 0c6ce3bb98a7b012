"""Sparse COO tensors on the emulated NPU: a GCN trains with the ops torch_npu 2.14.0 has
SparseNPU kernels for (the CPU's losses), and ``torch.sparse.mm`` fails as on the device
(its composite calls ``addmm``, which has none), as `migrate ops --torch` says."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

pytest.importorskip("torch")
pytestmark = pytest.mark.pinned_torch  # .ci/run's torch 2.14 job too

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


migrate = partial(run_migrate, cwd=HERE)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("sparse")
    code = (
        "import json, sys, gcn_model; "
        "json.dump({'step': gcn_model.step('npu'), 'sparse_mm': gcn_model.sparse_mm('npu')}, "
        "open(sys.argv[1], 'w'))"
    )
    report = out / "report.json"
    run = migrate(
        "run", "--emulate", "npu", "--report", str(report), "--", "python", "-c", code, str(out / "r.json")
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "r.json").read_text()), json.loads(report.read_text())


def test_gcn_training_step_on_sparse_tensors_matches_the_cpu(emulated):
    import gcn_model

    got, report = emulated
    want = gcn_model.step("cpu")
    assert got["step"]["losses"] == pytest.approx(want["losses"], rel=1e-5)
    assert got["step"]["adj"] == ["npu:0", "torch.sparse_coo", 12, True]
    for key in ("values", "dense", "doubled"):
        assert got["step"][key] == pytest.approx(want[key], rel=1e-6)
    ops = report["ops"]
    assert ops.get("aten::mm", 0) > 0 and ops.get("aten::_sparse_coo_tensor_with_dims_and_tensors", 0) > 0
    # building a sparse tensor on the device has a SparseNPU kernel: not a CPU fallback
    assert not [f for f in report["findings"] if f["kind"] == "cpu_fallback"], report["findings"]


def test_sparse_mm_fails_as_on_the_device_and_as_ops_torch_says(emulated):
    got, report = emulated
    assert got["sparse_mm"].startswith(
        "Could not run 'aten::addmm' with arguments from the 'SparsePrivateUse1' backend"
    ), got["sparse_mm"]
    row = next(f for f in report["findings"] if f["kind"] == "unsupported")
    assert row["op"] == "aten::addmm" and row["site"].startswith("gcn_model.py:")
    assert "no SparseNPU kernel for aten::addmm" in row["reason"]
    ops = migrate("ops", "--torch", "gcn_model:build_sparse_mm", "--train", "--format", "json")
    assert ops.returncode == 1, ops.stderr[-2000:]
    bad = [r for r in json.loads(ops.stdout)["ops"] if r["status"] == "unsupported"]
    assert [(r["op"], r["sparse_key"]) for r in bad] == [("aten::_sparse_addmm", "SparseNPU")]
    assert "aten::addmm" in bad[0]["reason"]
    fine = migrate("ops", "--torch", "gcn_model:build", "--train", "--format", "json")
    assert fine.returncode == 0, fine.stdout[-2000:]
