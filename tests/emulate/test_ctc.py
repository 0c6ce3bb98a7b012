"""CTC on the emulated NPU: ``F.ctc_loss`` with CPU length tensors trains with torch_npu's
``_ctc_loss`` kernel (the plain-tensor path the device takes) and the CPU's losses; the
Tensor-lengths overload, which has no NPU kernel, runs through the emulated CPU fallback
(arguments moved to the CPU: no device mismatch) and is reported."""

from __future__ import annotations

import json

import pytest
from run_migrate import HERE, migrate

pytest.importorskip("torch")
pytestmark = pytest.mark.pinned_torch  # .ci/run's torch 2.14 job too


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("ctc")
    code = (
        "import json, sys, ctc_model; json.dump({'cpu_lengths': ctc_model.step('npu'), "
        "'npu_lengths': ctc_model.step('npu', 'npu'), 'overload': ctc_model.tensor_overload('npu')}, "
        "open(sys.argv[1], 'w'))"
    )
    report = str(out / "report.json")
    run = migrate(
        "run",
        "--emulate",
        "npu",
        "--report",
        report,
        "--",
        "python",
        "-c",
        code,
        str(out / "r.json"),
        cwd=HERE,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "r.json").read_text()), json.loads((out / "report.json").read_text())


def test_ctc_training_with_cpu_lengths_runs_the_npu_kernel(emulated):
    import ctc_model

    got, report = emulated
    want = ctc_model.step("cpu")
    assert got["cpu_lengths"] == pytest.approx(want, rel=1e-5)
    assert got["npu_lengths"] == pytest.approx(want, rel=1e-5)
    assert (
        report["ops"].get("aten::_ctc_loss", 0) >= 6 and report["ops"].get("aten::_ctc_loss_backward", 0) >= 6
    )
    fallbacks = {f["op"] for f in report["findings"] if f["kind"] == "cpu_fallback"}
    assert fallbacks == {"aten::_ctc_loss.Tensor"}  # the direct call only
    # NPU length tensors are read on the host, as ctc_loss's kernel copies them
    syncs = [f for f in report["findings"] if f["kind"] == "host_sync" and f["op"] == "aten::_to_copy"]
    assert syncs and all(f["site"].startswith("ctc_model.py:") for f in syncs)


def test_an_op_without_npu_kernel_runs_through_the_cpu_fallback(emulated):
    import ctc_model

    got, report = emulated
    assert got["overload"][0] == "npu:0"
    assert got["overload"][1] == pytest.approx(ctc_model.tensor_overload("cpu")[1], rel=1e-6)
    row = next(f for f in report["findings"] if f["kind"] == "cpu_fallback")
    assert row["op"] == "aten::_ctc_loss.Tensor" and row["site"].startswith("ctc_model.py:")
