"""Compare: alignment, metrics, dtype handling, localization, gate files."""

from __future__ import annotations

import pytest
import torch

from migrate.core.errors import UsageError
from migrate.precision import metrics
from migrate.precision.compare import IncompatibleDumps, compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.metrics.pair import Pair


def compute_all(pair):
    return metrics.compute("tensor", pair)


FP32_GATE = """
dtypes:
  bfloat16: {rtol: 1.3e-6, atol_rms: 1.0e-5, cosine_min: 0.99999, mismatch_max: 0.01}
"""


@pytest.fixture(scope="module")
def fp32_ref(tmp_path_factory):
    """Reference fp32 dump of the transformer (built once for this module)."""
    from migrate.precision.runner import prepare

    out = tmp_path_factory.mktemp("ref") / "d"
    model, args, kwargs = prepare("prec_models:transformer_spec")
    with torch.no_grad(), dump(model, out, inputs=True):
        model(*args, **kwargs)
    return out


def test_fp32_vs_fp32_passes(tmp_path, make_dump, fp32_ref):
    other = make_dump("transformer_spec", tmp_path / "t", inputs=True)
    result = compare_dumps(fp32_ref, other)
    assert result and result.first_divergence is None
    assert {e["status"] for e in result.entries} == {"pass"}
    assert all(e["cosine"] == pytest.approx(1.0) and e["max_abs"] == 0 for e in result.entries)


@pytest.mark.parametrize("spec", ["mlp_spec", "conv_spec"])
def test_bf16_target_passes_bf16_gate_and_fails_fp32_gate(tmp_path, make_dump, spec):
    ref = make_dump(spec, tmp_path / "r")
    tgt = make_dump(spec, tmp_path / "t", dtype="bf16")
    result = compare_dumps(ref, tgt)
    assert result, [e["reason"] for e in result.entries if e["status"] == "fail"]
    assert all(
        e["dtype"] == "bfloat16" and e["ref_dtype"] == "float32" and e["max_abs"] > 0 for e in result.entries
    )
    gate = tmp_path / "fp32.yaml"
    gate.write_text(FP32_GATE)
    strict = compare_dumps(ref, tgt, gate=gate)
    assert not strict and strict.violations
    assert strict.first_divergence["name"] in ("layers.0", "conv1")


def test_transformer_bf16_passes_default_gate(tmp_path, make_dump, fp32_ref):
    tgt = make_dump("transformer_spec", tmp_path / "t", dtype="bf16")
    result = compare_dumps(fp32_ref, tgt)
    assert result and not any(e["status"] == "missing" for e in result.entries)


def test_perturbed_layer_is_first_divergence(tmp_path, make_dump):
    ref = make_dump("mlp_spec", tmp_path / "r")
    tgt = make_dump("mlp_spec", tmp_path / "t", env={"PREC_PERTURB": "layers.2:0.05"})
    result = compare_dumps(ref, tgt)
    assert not result
    assert result.first_divergence["name"] == "layers.2"
    before = [e for e in result.entries if e["name"] in ("layers.0", "layers.1")]
    assert all(e["status"] == "pass" for e in before)


def test_nan_injection_fails_at_its_layer(tmp_path, make_dump):
    ref = make_dump("mlp_spec", tmp_path / "r")
    tgt = make_dump("mlp_spec", tmp_path / "t", env={"PREC_NAN": "1"})
    result = compare_dumps(ref, tgt)
    assert not result and result.first_divergence["name"] == "layers.1"
    nan_entry = next(e for e in result.entries if e["name"] == "layers.1")
    assert nan_entry["status"] == "fail" and nan_entry["nan"] == 8
    assert "NaN/Inf" in nan_entry["reason"]


def test_missing_extra_and_mapping(tmp_path, make_dump, build):
    ref = make_dump("mlp_spec", tmp_path / "r")
    model, args, _ = build("mlp_spec")
    renamed = torch.nn.Module()
    renamed.blocks, renamed.act = model.layers, model.act
    renamed.forward = model.forward.__func__.__get__(renamed)
    renamed.layers = renamed.blocks  # same modules; named_modules lists them as blocks.*
    with torch.no_grad(), dump(renamed, tmp_path / "t"):
        renamed(*args)
    plain = compare_dumps(ref, tmp_path / "t")
    missing = [e for e in plain.entries if e["status"] == "missing"]
    assert not plain and {e["missing_in"] for e in missing} == {"target", "reference"}
    mapped = compare_dumps(
        ref, tmp_path / "t", mapping=_write(tmp_path / "m.yaml", "modules: {layers: blocks}\n")
    )
    assert mapped, [e for e in mapped.entries if e["status"] != "pass"]


def test_shape_mismatch_is_explicit(tmp_path, build):
    def mlp(width):
        torch.manual_seed(0)
        layers = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.Linear(width, 4))
        return layers, torch.randn(2, 8)

    for name, width in (("r", 16), ("t", 12)):
        model, x = mlp(width)
        with torch.no_grad(), dump(model, tmp_path / name):
            model(x)
    result = compare_dumps(tmp_path / "r", tmp_path / "t")
    bad = next(e for e in result.entries if e["name"] == "0")
    assert bad["status"] == "fail" and "shape mismatch" in bad["reason"]


def test_no_shared_records_is_incompatible(tmp_path, make_dump):
    a = make_dump("mlp_spec", tmp_path / "a", include=["layers.*"])
    b = make_dump("mlp_spec", tmp_path / "b", include=["act"])
    with pytest.raises(IncompatibleDumps):
        compare_dumps(a, b)
    with pytest.raises(UsageError):
        compare_dumps(a, tmp_path / "nowhere")


def test_stats_only_dumps_compare_by_stats(tmp_path, make_dump):
    a = make_dump("mlp_spec", tmp_path / "a", stats_only=True)
    b = make_dump("mlp_spec", tmp_path / "b", stats_only=True)
    c = make_dump("mlp_spec", tmp_path / "c", stats_only=True, env={"PREC_PERTURB": "layers.3:0.5"})
    assert compare_dumps(a, b)
    bad = compare_dumps(a, c)
    assert not bad and bad.first_divergence["name"] == "layers.3"


def test_gate_overrides_and_allowed_violations(tmp_path, make_dump):
    ref = make_dump("mlp_spec", tmp_path / "r")
    tgt = make_dump("mlp_spec", tmp_path / "t", env={"PREC_PERTURB": "layers.5:0.05"})
    failing = compare_dumps(ref, tgt)
    n = len(failing.violations)
    assert not failing and n >= 2
    allowed = _write(tmp_path / "g1.yaml", f"allowed_violations: {n}\n")
    assert compare_dumps(ref, tgt, gate=allowed)
    skip = _write(
        tmp_path / "g2.yaml",
        "overrides:\n  - {match: 'layers.5', skip: true}\n"
        "  - {match: 'act', mismatch_max: 1.0, cosine_min: 0.9, rel_err_max: 1}\n"
        "  - {match: '<root>', mismatch_max: 1.0, cosine_min: 0.9, rel_err_max: 1}\n",
    )
    assert compare_dumps(ref, tgt, gate=skip)
    with pytest.raises(UsageError):
        compare_dumps(ref, tgt, gate=_write(tmp_path / "bad.yaml", "overrides: [{rtol: 1}]\n"))


def test_metrics_on_known_tensors():
    ref = torch.tensor([1.0, -2.0, 3.0, 1e-9])
    tgt = torch.tensor([1.0, -2.0, 3.003, 2e-9])
    m = compute_all(Pair(ref, tgt, {"rtol": 1.3e-6, "atol": 1e-5, "rel_floor": 1e-3}))
    assert m["max_abs"] == pytest.approx(0.003, rel=1e-3)
    assert m["rmse"] == pytest.approx(0.0015, rel=1e-3)
    # the 1e-9 element differs by 100% relatively but sits below the floor: not flagged
    assert m["max_rel"] == pytest.approx(0.001, rel=1e-3)
    assert m["mismatch_ratio"] == pytest.approx(
        float((~torch.isclose(tgt, ref, rtol=1.3e-6, atol=1e-5)).float().mean())
    )
    assert m["one_thousandth_ratio"] == 0.75 and m["five_thousandth_ratio"] == 1.0
    expected_cos = torch.nn.functional.cosine_similarity(ref.double(), tgt.double(), dim=0)
    assert m["cosine"] == pytest.approx(float(expected_cos), abs=1e-9)
    g = torch.Generator().manual_seed(3)
    for _ in range(20):  # nearly equal tensors: the norm formula must not read above 1
        r = torch.randn(1000, generator=g)
        t = r * (1 + 1e-7 * torch.randn(1000, generator=g))
        assert -1.0 <= compute_all(Pair(r, t, {}))["cosine"] <= 1.0
    ortho = compute_all(Pair(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]), {}))
    assert ortho["cosine"] == pytest.approx(0.0, abs=1e-6)  # float32 norms: ~1e-7 absolute


def test_matching_infinities_are_not_errors():
    ref = torch.tensor([float("-inf"), 1.0, 2.0])
    ok = Pair(ref, ref.clone(), {"rtol": 1e-3, "atol": 1e-5})
    assert ok.nonfinite_mismatch == 0 and ok.inf == 1
    bad = Pair(ref, torch.tensor([float("-inf"), float("nan"), 2.0]), {"rtol": 1e-3})
    assert bad.nonfinite_mismatch == 1 and bad.nan == 1


def _write(path, text):
    path.write_text(text)
    return path


def test_near_zero_elements_do_not_diverge_on_relative_error(tmp_path):
    """msprobe flags 50% relative error on elements of 1e-8 inside an O(1) tensor; we
    judge such elements by the band around the tensor's scale. A whole tensor scaled by
    1.5 is a fault whatever its magnitude (gradients live at 1e-6)."""

    class Scale(torch.nn.Module):
        def __init__(self, s, tiny):
            super().__init__()
            self.s, self.tiny = s, tiny

        def forward(self, x):
            y = x * self.s
            y[:, 0] = 1e-8 * self.tiny  # near-zero elements, 50% apart between the runs
            return y

    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
    for name, s, tiny in (("r", 1.0, 1.0), ("t", 1.0, 1.5), ("big", 1.5e-8, 1.0), ("small", 1e-8, 1.0)):
        model = torch.nn.Sequential(torch.nn.Identity(), Scale(s, tiny))
        with torch.no_grad(), dump(model, tmp_path / name):
            model(x)
    result = compare_dumps(tmp_path / "r", tmp_path / "t")
    tiny = next(e for e in result.entries if e["name"] == "1")
    assert result and result.first_divergence is None
    assert tiny["max_rel"] < 1e-2 and tiny["max_abs"] > 0
    scaled = compare_dumps(tmp_path / "small", tmp_path / "big")
    assert not scaled and scaled.first_divergence["name"] == "1"
