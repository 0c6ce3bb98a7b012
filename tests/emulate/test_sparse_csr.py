"""Sparse CSR tensors on the emulated NPU: made on the device (``to_sparse_csr``,
``sparse_csr_tensor(device="npu")``), their parts and elementwise results equal the CPU's,
a graph convolution over a CSR adjacency trains with the CPU's losses, and ``CSR @ vector``
fails as on the device, all judged by the SparseCsrNPU kernels of the wheel's binary."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
import yaml
from run_migrate import migrate as run_migrate

pytest.importorskip("torch")
pytestmark = pytest.mark.pinned_torch

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
migrate = partial(run_migrate, cwd=HERE)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("csr")
    code = (
        "import json, sys, csr_model as m; json.dump({'parts': m.parts('npu'), 'step': m.step('npu'), "
        "'matvec': m.matvec('npu')}, open(sys.argv[1], 'w'))"
    )
    report = out / "report.json"
    run = migrate(
        "run", "--emulate", "npu", "--report", str(report), "--", "python", "-c", code, str(out / "r.json")
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "r.json").read_text()), json.loads(report.read_text())


def _csr_kernels() -> set[str]:
    doc = yaml.safe_load((ROOT / "op_registry/aten/torch_npu-2.14.0/sparse.yaml").read_text())
    return set(doc["keys"]["SparseCsrNPU"]["overloads"])


def test_csr_parts_and_elementwise_results_equal_the_cpu(emulated):
    import csr_model

    got, _ = emulated
    want = csr_model.parts("cpu")
    assert got["parts"]["layout"] == ["torch.sparse_csr", "npu:0", "torch.sparse_csr", "npu:0"]
    for key in ("crow", "col", "nnz", "cpu"):
        assert got["parts"][key] == want[key], key
    for key in ("values", "scaled", "summed", "made"):
        flat = [v for row in want[key] for v in (row if isinstance(row, list) else [row])]
        mine = [v for row in got["parts"][key] for v in (row if isinstance(row, list) else [row])]
        assert mine == pytest.approx(flat, rel=1e-6), key


def test_a_graph_convolution_over_csr_trains_with_the_cpu_losses(emulated):
    import csr_model

    got, report = emulated
    assert got["step"] == pytest.approx(csr_model.step("cpu"), rel=1e-5)
    kernels = _csr_kernels()
    assert {"mm", "crow_indices", "col_indices", "values"} <= kernels
    assert report["ops"]["aten::mm"] >= 3 and report["ops"]["aten::crow_indices"] >= 1
    assert "aten::prim_layout" not in report["ops"] and "prim::layout" not in report["ops"]  # metadata


def test_csr_matvec_fails_as_on_the_device(emulated):
    got, report = emulated
    assert "addmv.out" not in _csr_kernels()
    want = "Could not run 'aten::addmv_' with arguments from the 'SparseCsrPrivateUse1'"
    assert got["matvec"].startswith(want)
    bad = [f for f in report["findings"] if f["kind"] == "unsupported"]
    assert [(f["op"], f["site"].split(":")[0]) for f in bad] == [("aten::addmv_", "csr_model.py")]
    assert "no SparseCsrNPU kernel for aten::addmv.out" in bad[0]["reason"]
