"""Culprit-op bisection (issue 22, item 3): the fused op call that changes a ported
model's result is named; honest fused kernels, which differ from their composition by
rounding only, are not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fused_models as FM
import pytest
import torch

from migrate.commands.bisect import emulated_fused_ops, render_text
from migrate.precision.fused_bisect import bisect_fused

pytest.importorskip("transformers")
HERE = Path(__file__).resolve().parent


def _bisect(dtype, rope=None, rms=None, swap="native"):
    model, args, kwargs = FM.build_ported(dtype)
    saved = FM.npu_rotary_mul, FM.npu_rms_norm
    FM.npu_rotary_mul = rope or FM.npu_rotary_mul
    FM.npu_rms_norm = rms or FM.npu_rms_norm
    try:
        with FM.fused_rope():
            return bisect_fused(model, [(args, kwargs)], emulated_fused_ops(), swap=swap)
    finally:
        FM.npu_rotary_mul, FM.npu_rms_norm = saved


def _rope_line() -> str:
    source = Path(FM.__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if "return npu_rotary_mul(q" in text)
    return f"fused_models.py:{line}"


def test_a_rotary_kernel_with_the_wrong_layout_is_named():
    report = _bisect(torch.float32, rope=FM.wrong_layout())
    culprit = report["culprit"]
    assert culprit["op"] == "npu_rotary_mul" and culprit["site"].endswith(_rope_line())
    assert culprit["calls"] == [0, 1, 2, 3] and culprit["changes_result"]
    ops = {row["op"]: row["status"] for row in report["ops"]}
    assert ops == {"npu_rotary_mul": "fail", "npu_rms_norm": "pass", "npu_swiglu": "pass"}


def test_one_faulty_call_among_the_layers_is_narrowed_down():
    report = _bisect(torch.bfloat16, rope=FM.wrong_layout(only_call=2))
    culprit = report["culprit"]
    assert (culprit["op"], culprit["calls"], culprit["of"]) == ("npu_rotary_mul", [2], 4)
    assert culprit["local"]["class"] == "bfloat16"


def test_an_honest_kernel_in_bf16_is_not_blamed():
    """An RMSNorm kernel that stays in bf16 differs from the fp32-internal composition by
    bf16 rounding: within the class's thresholds."""
    report = _bisect(torch.bfloat16, rms=FM.bf16_rms_norm)
    rms = next(row for row in report["calls"] if row["op"] == "npu_rms_norm")
    assert report["culprit"] is None and rms["worst_rel_err"] > 0 and rms["differ"] == 0
    assert report["all"]["status"] == "pass"
    assert _bisect(torch.bfloat16, swap="fp32")["culprit"] is None


def test_cli_bisects_a_port_that_imports_torch_npu(tmp_path):
    """`import torch_npu` in the model's code gets the emulator's; a subprocess keeps the
    emulated device out of this one."""
    env = {**os.environ, "PREC_ROPE_BUG": "1", "PYTHONPATH": str(HERE)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "bisect",
            "-m",
            "npu_specs:ported",
            "--dtype",
            "bf16",
            "-f",
            "json",
            "-o",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        cwd=HERE,
        env=env,
        timeout=300,
    )
    assert run.returncode == 1, run.stderr[-800:]
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["culprit"]["op"] == "npu_rotary_mul"
    lines = (HERE / "npu_specs.py").read_text().splitlines()
    q, k = (next(i for i, text in enumerate(lines, 1) if f"npu_rotary_mul({v}" in text) for v in "qk")
    assert report["culprit"]["site"] == f"npu_specs.py:{q}"
    assert report["culprit"]["also"] == [f"npu_rotary_mul at npu_specs.py:{k}"]


def test_a_model_without_fused_calls_has_nothing_to_bisect():
    report = bisect_fused(torch.nn.Linear(4, 4), [((torch.randn(2, 4),), {})], emulated_fused_ops())
    assert report["calls"] == [] and report["culprit"] is None and report["runs"] == 1


def test_cli_output_never_overwrites_the_model_spec(tmp_path):
    spec = tmp_path / "port_spec.py"
    spec.write_text("def ported():\n    raise AssertionError('must not run')\n")
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "bisect", "-m", "port_spec:ported", "-o", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    assert run.returncode == 2 and "-o" in run.stderr, run.stderr
    assert "must not run" in spec.read_text()


def _bisect_two_site(**swaps):
    model, args, kwargs = FM.build_two_site()
    saved = {name: getattr(FM, name) for name in swaps}
    for name, kernel in swaps.items():
        setattr(FM, name, kernel)
    try:
        return bisect_fused(model, [(args, kwargs)], emulated_fused_ops())
    finally:
        for name, kernel in saved.items():
            setattr(FM, name, kernel)


def test_an_output_in_another_layout_differs_at_every_call():
    """A BNSD output where BSND was asked: the per-call check compares it, names the axis
    permutation that restores the composition's values, and counts every call as differing."""
    report = _bisect_two_site(npu_fusion_attention=FM.bnsd_attention)
    row = next(r for r in report["calls"] if r["op"] == "npu_fusion_attention")
    assert (row["calls"], row["differ"]) == (2, 2)
    culprit = report["culprit"]
    assert culprit["op"] == "npu_fusion_attention" and culprit["calls"] == [0, 1] and culprit["of"] == 2
    assert "differs from" in culprit["local"]["reason"]
    assert culprit["local"]["permuted"]["axes"] == [0, 2, 1, 3]
    assert culprit["local"]["permuted"]["rel_err"] < 1e-5
    assert render_text({**report, "torch": "x"}).startswith("FAIL culprit: npu_fusion_attention")


def test_culprit_call_indices_count_the_sites_calls():
    """The rotary kernel wrong on the k site's second call only (the op's 4th call overall):
    call 1 of that site's 2, not call 3."""
    seen = [0]
    ref = FM.FUSED["npu_rotary_mul"].reference

    def kernel(x, r1, r2, rotary_mode="half", rotate=None):
        seen[0] += 1
        mode = "interleave" if seen[0] % 4 == 0 else rotary_mode
        return ref(x, r1, r2, rotary_mode=mode)

    report = _bisect_two_site(npu_rotary_mul=kernel)
    culprit = report["culprit"]
    source = Path(FM.__file__).read_text().splitlines()
    k_line = next(i for i, text in enumerate(source, 1) if "k = npu_rotary_mul(k" in text)
    assert culprit["site"].endswith(f"fused_models.py:{k_line}")
    assert (culprit["calls"], culprit["of"]) == ([1], 2)
    assert max(c["calls"] for c in report["calls"]) == 2
