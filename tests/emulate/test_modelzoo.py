"""An NPU-native (Ascend ModelZoo style) training script, unported, under `migrate run
--emulate npu` (modelzoo_checks.py): the torch_npu names such scripts use —
``torch.distributed.is_hccl_available``, ``torch_npu.utils.profiler.Profile``,
``npu_one_hot``, ``npu_softmax_cross_entropy_with_logits`` — against their documented
semantics computed here on the CPU, and the training against the same loss written in
plain PyTorch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from migrate.emulate.fused import FUSED  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "modelzoo_checks.py"


def emulated(out: Path, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env}
    cmd = [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--report", str(out / "report.json")]
    cmd += ["--", "python", str(SCRIPT), str(out)]
    return subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    out = tmp_path_factory.mktemp("modelzoo")
    proc = emulated(out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    report = json.loads((out / "report.json").read_text())
    return out, json.loads((out / "results.json").read_text()), report


def test_hccl_is_available_as_torch_npu_says(zoo):
    assert zoo[1]["hccl"] == [True, True]


def test_one_hot_follows_the_op_documentation(zoo):
    ops = zoo[1]["ops"]
    assert ops["one_hot_dtype"] == "torch.float32" and ops["one_hot_device"] == "npu:0"
    indices = [[5, 3], [0, -1]]  # 5 and -1 lie outside depth 4: rows of off_value
    want = [[[7.0 if j == i else -2.0 for j in range(4)] for i in row] for row in indices]
    assert ops["one_hot"] == want


def test_softmax_cross_entropy_is_per_sample_with_the_kernels_gradient(zoo):
    ops = zoo[1]["ops"]
    assert ops["loss_dtype"] == "torch.float32"
    weights = [1.0, 2.0, 3.0]  # the gradient given to backward
    for f, lab, loss, grad, w in zip(ops["features"], ops["labels"], ops["loss"], ops["grad"], weights):
        assert abs(sum(lab) - 1) > 0.05  # labels that are no distribution tell the formulas apart
        lse = math.log(sum(math.exp(v) for v in f))
        assert loss == pytest.approx(sum(p * (lse - v) for p, v in zip(lab, f)), rel=1e-5)
        softmax = [math.exp(v - lse) for v in f]  # backprop = softmax - labels, as the kernel's
        assert grad == pytest.approx([w * (s - p) for s, p in zip(softmax, lab)], rel=1e-5, abs=1e-6)


def test_label_smoothing_training_gives_the_plain_pytorch_losses(zoo):
    out, res, report = zoo
    start = torch.load(out / "start.pt")
    model = torch.nn.Linear(6, 5)
    model.load_state_dict(start["params"])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    smooth = 0.1
    target = torch.nn.functional.one_hot(start["y"], 5) * (1 - smooth - smooth / 4) + smooth / 4
    want = []
    for _ in range(len(res["losses"])):
        loss = -(target * torch.log_softmax(model(start["x"]), 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    assert len(want) == 3 and want[-1] < want[0]
    assert res["losses"] == pytest.approx(want, rel=1e-5)
    assert {"npu::npu_one_hot", "npu::npu_softmax_cross_entropy_with_logits"} <= set(report["ops"])


def test_profile_is_one_object_whose_start_and_end_alternate(zoo):
    profile = zoo[1]["profile"]
    assert profile == {"singleton": True, "start_twice": "start interface can only be called once"}
    assert (zoo[0] / "steps.txt").read_text() == "0\n1\n2\n"  # profiling off: every step ran


def test_an_enabled_profile_ends_the_program_after_its_step(tmp_path):
    proc = emulated(tmp_path, PROFILE_TYPE="TORCH", PROFILE_START_STEP="2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "steps.txt").read_text() == "0\n1\n"
    assert not (tmp_path / "results.json").exists()
    assert "torch_npu.utils.profiler.Profile ended the program after step 2" in proc.stderr


def test_the_next_most_used_ops_run_on_the_npu_as_their_formulas(zoo):
    out, _, report = zoo
    got = torch.load(out / "next_ops.pt")
    assert got["devices"] == ["npu:0"] * 5 and got["inf_nan"] is True
    x, w, b = got["x"], got["w"], got["b"]
    lin = x @ w.T + b
    h = lin * torch.sigmoid(1.702 * lin)  # FastGelu
    assert torch.allclose(got["h"], h, atol=1e-5)
    scores = h @ h.transpose(1, 2)
    assert torch.allclose(got["scores"], scores, atol=1e-4)
    probs = torch.softmax((scores.unsqueeze(1) * 0.25).masked_fill(got["mask"], -1e4), -1)
    assert torch.allclose(got["probs"], probs, atol=1e-5)
    assert torch.allclose(got["dec"], got["gt"], atol=1e-4)  # decode inverts encode
    assert got["overflow"] == [False, True]
    names = ("npu_format_cast", "npu_linear", "fast_gelu", "npu_bmmV2", "npu_scaled_masked_softmax")
    names += ("npu_bounding_box_encode", "npu_bounding_box_decode")
    assert {f"npu::{n}" for n in names} <= set(report["ops"])


def test_the_detection_ops_run_on_the_npu_as_their_references(zoo):
    out, _, report = zoo
    got = torch.load(out / "detection_ops.pt")
    assert got["devices"] == ["npu:0"] * 6
    scored = torch.cat([got["boxes"], got["scores"][:, None]], 1)
    rows, idx, keep = FUSED["npu_nms_with_mask"].reference(scored, 0.3)
    assert torch.equal(got["rows"], rows) and torch.equal(got["idx"], idx) and torch.equal(got["keep"], keep)
    assert 0 < int(keep.sum()) < 12  # the draw has overlaps: some kept, some dropped
    weight = got["weight"].clone().requires_grad_()
    ref, _ = FUSED["npu_deformable_conv2d"].reference(
        got["x"], weight, got["offset"], None, [3, 3], [1, 1, 1, 1], [1, 1, 1, 1]
    )
    ref.square().sum().backward()
    torch.testing.assert_close(got["out"], ref.detach())
    torch.testing.assert_close(got["grad"], weight.grad)
    names = ("npu_nms_with_mask", "npu_batch_nms", "npu_deformable_conv2d")
    assert {f"npu::{n}" for n in names} <= set(report["ops"])


def test_legacy_tensor_types_build_check_and_cast_on_the_npu(zoo):
    got = zoo[1]["legacy"]
    assert got["found_inf"] == [[0.0], "torch.float32", "torch.npu.FloatTensor"]
    assert got["buf"] == [[3], "npu:0"]
    assert got["picked"] == [[2.0, 0.0], [5.0, 3.0]]
    assert got["half"] == ["torch.float16", "npu:0", "torch.npu.HalfTensor"]
    assert got["isinstance"] == [True, False, False, True]
