"""A wrong factor in the forward pass is judged against what chance gives it: a norm's
wrong epsilon (4.6% in bf16, inside the cosine and relative-error bands) fails at the norm;
honest bf16 runs of real architectures do not."""

from __future__ import annotations

import faults as F
import hf_models as H
import pytest
import torch

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.judge import judge, tensor_metrics
from migrate.precision.replay import replay_model
from migrate.precision.runner import cast_model, move
from migrate.precision.thresholds import load_gate

pytest.importorskip("transformers")


def _run(out, name: str, dtype=None, eps_site: str | None = None, **kw):
    model, args, kwargs = H.build(name)
    if dtype is not None:
        model = cast_model(model, dtype)
        args, kwargs = move(args, "cpu", dtype), move(kwargs, "cpu", dtype)
    if eps_site is not None:
        F.wrong_eps(model, eps_site, 0.1)
    with torch.no_grad(), dump(model, out, **kw):
        model(*args, **kwargs)
    return model, args, kwargs


@pytest.mark.parametrize("name", ["bert", "t5", "resnet"])
def test_a_wrong_norm_epsilon_in_bf16_fails_at_the_norm(tmp_path, name):
    site = F.norm_site(H.build(name)[0])
    _run(tmp_path / "r", name, inputs=True)
    model, args, kwargs = _run(tmp_path / "t", name, torch.bfloat16, eps_site=site)
    result = compare_dumps(tmp_path / "r", tmp_path / "t")
    first = result.first_divergence
    assert not result and first["name"] == site, first
    assert "scale_noise" in first["reason"] and "a wrong factor" in first["reason"]
    entry = next(e for e in result.entries if e["name"] == site and e["kind"] == "forward.output")
    # inside the bf16 cosine and relative-error bands: only the factor gives it away
    assert entry["cosine"] > 0.999 and entry["rel_err"] < 0.05
    assert entry["scale_err"] > 3 * entry["scale_noise"]
    replayed = replay_model(model, tmp_path / "r", dtype=torch.bfloat16)
    assert replayed.culprit is not None and replayed.culprit["name"] == site


def test_without_the_forward_factor_check_the_eps_fault_passes(tmp_path):
    """The check is what catches it: a gate with the forward scale_err limit off passes."""
    site = "bert.encoder.layer.1.output.LayerNorm"
    _run(tmp_path / "r", "bert")
    _run(tmp_path / "t", "bert", torch.bfloat16, eps_site=site)
    gate = tmp_path / "gate.yaml"
    gate.write_text("dtypes:\n  bfloat16: {scale_err_max: null}\n")
    assert compare_dumps(tmp_path / "r", tmp_path / "t", gate=gate)
    assert not compare_dumps(tmp_path / "r", tmp_path / "t")


@pytest.mark.parametrize("name", ["bert", "llama", "vit", "t5"])
def test_honest_bf16_runs_do_not_fail_on_a_factor(tmp_path, name):
    _run(tmp_path / "r", name, inputs=True)
    model, _, _ = _run(tmp_path / "t", name, torch.bfloat16)
    result = compare_dumps(tmp_path / "r", tmp_path / "t")
    assert result, [(e["name"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3]
    judged = [e for e in result.entries if e.get("scale_noise") and e["scale_err"] > 0.01]
    assert all(e["status"] != "fail" for e in judged)
    replayed = replay_model(model, tmp_path / "r", dtype=torch.bfloat16)
    assert replayed.culprit is None, replayed.culprit


def test_the_noise_multiple_is_a_gate_key_with_a_gradient_variant(tmp_path):
    gate = load_gate()
    fwd = gate.for_entry("x", "bfloat16", "bfloat16", kind="forward.output")
    bwd = gate.for_entry("x", "bfloat16", "bfloat16", kind="backward.grad_input")
    assert fwd["scale_noise_k"] == 3.0 and bwd["scale_noise_k"] == 2.0
    assert fwd["scale_err_max"] == 0.01 and bwd["scale_err_max"] == 0.2
    assert gate.for_entry("x", "float32", "float32", kind="backward.parameter")["scale_err_max"] is None
    ref = torch.randn(4096, generator=torch.Generator().manual_seed(0))
    wrong = ref * 0.97 + 0.003 * torch.randn(4096, generator=torch.Generator().manual_seed(1))
    m = tensor_metrics(ref, wrong, fwd)
    assert judge(m, fwd)[0] == "fail"
    assert judge(m, {**fwd, "scale_noise_k": 1e6})[0] != "fail"  # k times the noise is what counts
    bad = tmp_path / "bad.yaml"
    bad.write_text("dtypes:\n  bfloat16: {scale_noise_k: -1}\n")
    with pytest.raises(UsageError, match="scale_noise_k"):
        load_gate(bad)
