"""The apex stand-in under `migrate run --emulate npu` (amp_checks.py): O0, O1 and O2 training
of a tiny model against the same training written here in plain PyTorch on the CPU with the
casts each opt level documents, a dynamic scaler meeting an injected inf, and the scaler's
state_dict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LR, SCALE = 0.1, 128.0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import os
    import sys

    out = tmp_path_factory.mktemp("apex_amp")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--report", str(out / "report.json")]
    cmd += ["--", "python", str(HERE / "amp_checks.py"), str(out)]
    proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    report = json.loads((out / "report.json").read_text())
    return torch.load(out / "results.pt"), report, proc.stdout


def _params(start, half: bool):
    """w0, b0, bn weight, bn bias, w3, b3 as leaves; the linears in float16 when ``half``."""
    names = ("0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias")
    out = []
    for name in names:
        t = start[name].clone()
        if half and not name.startswith("1."):
            t = t.half()
        out.append(t.requires_grad_())
    return out


def _forward(params, start, x, y, linear_dtype):
    w0, b0, gamma, beta, w3, b3 = params
    mean, var = start["1.running_mean"].clone(), start["1.running_var"].clone()
    h = F.linear(x.to(linear_dtype), w0.to(linear_dtype), b0.to(linear_dtype))
    h = F.relu(F.batch_norm(h, mean, var, gamma, beta, training=True))
    logits = F.linear(h, w3.to(linear_dtype), b3.to(linear_dtype))
    return F.cross_entropy(logits.float(), y)


def _reference(res, level: str, steps: int = 3):
    """Plain SGD on the CPU: O0 in float32; O1 float32 weights, the linears computed in
    float16 (autocast's lower-precision list), the loss in float32, gradients of loss * 128
    divided by 128; O2 float16 linears stepped through float32 masters, batchnorm float32."""
    start, x, y = res["start"], res["x"], res["y"]
    half = level == "O2"
    params = _params(start, half)
    masters = [p.detach().float().clone() for p in params]
    scale = 1.0 if level == "O0" else SCALE
    losses = []
    for _ in range(steps):
        loss = _forward(params, start, x, y, torch.float32 if level == "O0" else torch.float16)
        (loss * scale).backward()
        losses.append(loss.item())
        with torch.no_grad():
            for p, m in zip(params, masters):
                m -= LR * (p.grad.float() / scale)
                p.copy_(m)
                p.grad = None
    return losses, masters


def test_o0_trains_as_plain_float32(run):
    res = run[0]
    losses, masters = _reference(res, "O0")
    assert res["O0"]["losses"] == pytest.approx(losses, rel=1e-6)
    assert res["O0"]["scales"] == [1.0] * 3 and res["O0"]["scaled"] == res["O0"]["losses"]
    assert set(res["O0"]["dtypes"].values()) == {"torch.float32"} and res["O0"]["devices"] == ["npu:0"]
    for got, want in zip(res["O0"]["masters"], masters):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_o1_casts_the_linears_to_float16_and_keeps_float32_weights(run):
    res = run[0]
    losses, masters = _reference(res, "O1")
    o1 = res["O1"]
    assert o1["losses"] == pytest.approx(losses, rel=1e-6)
    o0 = res["O0"]["losses"]  # float16 linears: visibly not the float32 losses
    assert max(abs(a - b) / b for a, b in zip(o1["losses"], o0)) > 1e-5
    assert set(o1["dtypes"].values()) == {"torch.float32"}  # O1 never casts the model
    assert o1["out_dtype"] == "torch.float16"  # the last linear ran in float16
    assert o1["scaled"] == pytest.approx([v * SCALE for v in o1["losses"]], rel=1e-6)
    for got, want in zip(o1["masters"], masters):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_o2_steps_float32_masters_of_a_float16_model(run):
    res = run[0]
    losses, masters = _reference(res, "O2")
    o2 = res["O2"]
    assert o2["losses"] == pytest.approx(losses, rel=1e-6)
    want_dtypes = {"0.weight": "torch.float16", "1.weight": "torch.float32", "3.bias": "torch.float16"}
    assert {k: o2["dtypes"][k] for k in want_dtypes} == want_dtypes  # batchnorm kept float32
    assert o2["out_dtype"] == "torch.float32"  # outputs cast back
    assert o2["state_dict_dtypes"] == ["torch.float32"]  # state_dict() gives float32
    assert [m.dtype for m in o2["masters"]] == [torch.float32] * 6
    for got, want in zip(o2["masters"], masters):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    w0 = o2["masters"][0]
    assert torch.equal(o2["model"]["0.weight"], w0.half())  # the model holds the masters, rounded
    assert (w0 - w0.half().float()).abs().max() > 0  # and the masters more than float16 holds


def test_a_dynamic_scaler_skips_the_overflowed_step_and_halves(run):
    res, _, stdout = run
    dyn = res["dynamic"]
    scale, clean, want = 2.0**16, 0, []  # apex's rule: halve on overflow, double after 2 clean
    for step in range(4):
        if step == 1:
            scale, clean = scale / 2, 0
        else:
            clean += 1
            if clean == 2:
                scale, clean = scale * 2, 0
        want.append(scale)
    assert dyn["scales"] == want
    assert dyn["steps_taken"] == [True, False, True, True]
    assert dyn["scaled"][0] == pytest.approx(dyn["losses"][0] * 2.0**16, rel=1e-6)
    losses, _ = _reference(res, "O2", steps=3)  # the skipped step changed nothing
    assert [dyn["losses"][0], *dyn["losses"][2:]] == pytest.approx(losses, rel=1e-6)
    assert "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0" in stdout


def test_the_scaler_state_dict_round_trips(run):
    sd = run[0]["state_dict"]
    assert sd["saved"] == {"loss_scaler0": {"loss_scale": 65536.0, "unskipped": 0}}
    assert sd["restored"] == sd["saved"]  # after setting 1.0 / 7 and loading the saved file
    assert 'Unexpected key(s) in state_dict: "optimizer"' in sd["bad_key"]


def test_the_run_reports_the_stand_in_and_lacks_unemulated_names(run):
    res, report, _ = run
    assert res["missing"] == [False, "0.1+emulated"]  # hasattr(apex.optimizers, "FusedAdam")
    assert any("apex: not installed; the emulation's stand-in ran" in n for n in report["notes"])
    assert report["ops"]["aten::addmm"] > 0  # the training ran on the emulated NPU
