"""What a faithful low-precision or other-device run can honestly produce, and faults that
must still fail: tiny and subnormal values, wrong factors on a few numbers, gradients that
are rounding noise, errors carried through BatchNorm on a batch of 2, NaN made by a
float16 step (issue 22)."""

from __future__ import annotations

import math

import faults as F
import hf_zoo as Z
import pytest
import torch

from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.judge import judge, tensor_metrics
from migrate.precision.metrics.pair import norm
from migrate.precision.runner import cast_model, move, probe_loss
from migrate.precision.thresholds import load_gate

pytest.importorskip("transformers")


def _th(cls: str, kind: str = "forward.output") -> dict:
    return load_gate().for_entry("x", cls, cls, kind=kind)


def test_norms_of_vanishing_activations_do_not_underflow():
    t = torch.full((1000,), 1e-22)
    assert norm(t) == pytest.approx(1e-22 * math.sqrt(1000), rel=1e-6)
    # a randomly initialised deep CNN: activations 1e-24, an fp32 run on another device
    ref = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 1e-24
    other = ref * (1 + 1e-7 * torch.randn(4096, generator=torch.Generator().manual_seed(1)))
    m = tensor_metrics(ref, other, _th("float32"))
    assert m["cosine"] > 0.9999999 and judge(m, _th("float32"))[0] == "pass"
    # values below fp32's smallest normal cannot hold relative precision
    sub = ref * 1e-18
    assert judge(tensor_metrics(sub, sub * 1.001, _th("float32")), _th("float32")) == (
        "pass",
        "error below the smallest normal float32 (1.2e-38)",
    )


def test_a_wrong_factor_must_stand_out_from_the_noise():
    th = _th("bfloat16", "backward.grad_input")
    gen = torch.Generator().manual_seed(0)
    # 8 numbers, one dominating: 27% noise on it looks like a factor and is not judged
    few = torch.tensor([3.0, 0.2, -0.1, 0.05, 0.1, -0.2, 0.1, 0.03])
    noisy = few.clone()
    noisy[0] *= 1.27
    m = tensor_metrics(few, noisy, th)
    assert m["scale_err"] > th["scale_err_max"] and m["scale_err"] <= m["scale_noise"]
    assert judge(m, th)[0] != "fail"
    # a backward 25% wrong on a real tensor, under bf16 noise: caught
    big = torch.randn(4096, generator=gen)
    wrong = big * 1.25 + 0.1 * torch.randn(4096, generator=gen)
    m = tensor_metrics(big, wrong, th)
    status, reason = judge(m, th)
    assert status == "fail" and reason.startswith(f"scale_err {m['scale_err']:.3g} > 0.2")


def _step(name: str, out, dtype=None, hooks=(), seed=None):
    torch.manual_seed(0)
    model, args, kwargs = Z.build(name)
    if seed is not None:  # other pixels
        args = (torch.randn(args[0].shape, generator=torch.Generator().manual_seed(seed)),)
    if dtype is not None:
        model = cast_model(model, dtype)
        args, kwargs = move(args, "cpu", dtype), move(kwargs, "cpu", dtype)
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    for inject in hooks:
        inject(model)
    with dump(model, out, grads=True):
        probe_loss(Z.main_output(model(*args, **kwargs))).backward()


def test_gradients_that_are_rounding_noise_pass(tmp_path):
    """CLIP's last text layer: queries and keys get 4e-8 against 1.5 through the
    attention (one token feeds the loss); bf16 holds exact zeros there."""
    _step("clip", tmp_path / "r")
    _step("clip", tmp_path / "b", torch.bfloat16)
    result = compare_dumps(tmp_path / "r", tmp_path / "b")
    assert result, [e["reason"] for e in result.entries if e["status"] == "fail"][:2]
    k = next(
        e
        for e in result.entries
        if e["name"] == "text_model.encoder.layers.1.self_attn.k_proj" and e["kind"] == "backward.grad_output"
    )
    assert k["floored"] and k["cosine"] is None


def test_batchnorm_on_a_batch_of_two_passes_in_bf16_and_a_fault_still_fails(tmp_path):
    """RegNet (squeeze-excite, BatchNorm in training on 2 images): bf16 gradients carry
    20-30% noise and the squeeze-excite bottleneck turns it into factors; a 25% wrong
    backward into a middle layer jumps, and is named."""
    _step("regnet", tmp_path / "r")
    _step("regnet", tmp_path / "b", torch.bfloat16)
    honest = compare_dumps(tmp_path / "r", tmp_path / "b")
    assert honest, [e["reason"] for e in honest.entries if e["status"] == "fail"][:2]
    assert any("carried" in e["reason"] for e in honest.entries)
    model, _, _ = Z.build("regnet")
    site = F.weight_site(model)
    _step("regnet", tmp_path / "f", torch.bfloat16, hooks=[lambda m: F.scale_grad_input(m, site, 1.25)])
    wrong = compare_dumps(tmp_path / "r", tmp_path / "f")
    assert not wrong and wrong.first_divergence["name"] == site


def test_a_squeeze_of_values_that_cancel_passes_in_bf16_and_a_fault_after_it_fails(tmp_path):
    """EfficientNet, pixels of seed 2: the squeeze-excite's spatial mean of block 0 cancels
    (cond 90), the error its BatchNorm statistics share grows 5.4x there, and the 4-value
    reduce after it failed at cosine 0.9987. The pool's cond carries it; a 1.5x squeeze in
    a later block, and the reduce off by 1.25, still fail where they are made."""
    _step("efficientnet", tmp_path / "r", seed=2)
    _step("efficientnet", tmp_path / "b", torch.bfloat16, seed=2)
    honest = compare_dumps(tmp_path / "r", tmp_path / "b")
    assert honest, [e["reason"] for e in honest.entries if e["status"] == "fail"][:2]
    reduce = "efficientnet.encoder.blocks.0.squeeze_excite.reduce"
    entry = next(e for e in honest.entries if e["name"] == reduce and e["kind"] == "forward.output")
    assert entry["status"] == "warn" and "carried" in entry["reason"]

    def scaled(site: str, factor: float):
        def inject(model):
            dict(model.named_modules())[site].register_forward_hook(lambda m, i, o: o * factor)

        return inject

    for site, factor in (("efficientnet.encoder.blocks.3.squeeze_excite.squeeze", 1.5), (reduce, 1.25)):
        _step("efficientnet", tmp_path / site, torch.bfloat16, hooks=[scaled(site, factor)], seed=2)
        wrong = compare_dumps(tmp_path / "r", tmp_path / site)
        assert not wrong and wrong.first_divergence["name"] == site


def test_nan_made_by_a_float16_step_is_a_range_finding(tmp_path):
    """DeiT's zero-initialised tokens are constant rows: torch's float16 LayerNorm backward
    computes 1/sqrt(1e-12) there and returns NaN though the true gradient fits float16."""
    _step("deit", tmp_path / "r")
    _step("deit", tmp_path / "h", torch.float16)
    result = compare_dumps(tmp_path / "r", tmp_path / "h")
    first = result.first_divergence
    assert not result and first["name"] == "deit.layers.0.layernorm_before"
    assert first["cause"] == "range" and "not a difference in what the port computes" in first["reason"]
    later = [e for e in result.entries if e["status"] == "fail" and e["name"] == "deit.layers.0"]
    assert later and all(e["cause"] == "carried" for e in later)
