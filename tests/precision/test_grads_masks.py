"""Gradients that mean something (weight gradients, the spec's loss, bands that catch a
wrong factor in bf16) and no false alarms from min-value masks or the tool's own casts."""

from __future__ import annotations

import json

import faults as F
import hf_models as H
import pytest
import torch

from migrate.cli import app
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.runner import cast_model, move, probe_loss, saturating_cast

pytest.importorskip("transformers")


def _cli(*argv):
    from typer.testing import CliRunner

    return CliRunner().invoke(app, list(argv), catch_exceptions=False)


def test_halved_weight_gradient_of_a_custom_linear_is_caught(tmp_path, monkeypatch):
    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    ref, bad = tmp_path / "r", tmp_path / "b"
    assert _cli("dump", "-m", "zoo_specs:custom_linear", "-o", str(ref), "--grads", "--params").exit_code == 0
    monkeypatch.setenv("PREC_WGRAD", "0.5")
    assert _cli("dump", "-m", "zoo_specs:custom_linear", "-o", str(bad), "--grads", "--params").exit_code == 0
    result = compare_dumps(ref, bad)
    assert not result
    assert result.first_divergence["name"] == "mid"
    assert result.first_divergence["kind"] == "backward.parameter"
    # the spec's loss was backpropagated (MSE against a target), not a sum of outputs
    honest = compare_dumps(ref, ref)
    assert honest and any(e["kind"] == "backward.parameter" for e in honest.entries)


def _train(out, mode="fp32", hooks=()):
    model, args, kwargs = H.build("gpt2")
    if mode == "bf16":
        model = cast_model(model, torch.bfloat16)
    model.train()
    for inject in hooks:
        inject(model)
    with dump(model, out, grads=True):
        probe_loss(model(*args, **kwargs).logits).backward()
    return model


def test_bf16_training_step_passes_and_a_25_percent_wrong_backward_fails(tmp_path):
    _train(tmp_path / "r")
    _train(tmp_path / "h", "bf16")
    honest = compare_dumps(tmp_path / "r", tmp_path / "h")
    assert honest, [(e["name"], e["kind"], e["reason"]) for e in honest.entries if e["status"] == "fail"][:3]
    site = "transformer.h.1.mlp.c_fc"
    _train(tmp_path / "f", "bf16", hooks=[lambda m: F.scale_grad_input(m, site, 1.25)])
    wrong = compare_dumps(tmp_path / "r", tmp_path / "f")
    assert not wrong and wrong.first_divergence["name"] == site
    assert "scale_err" in wrong.first_divergence["reason"]
    _train(tmp_path / "w", "bf16", hooks=[lambda m: F.scale_weight_grad(m, site, 0.5)])
    halved = compare_dumps(tmp_path / "r", tmp_path / "w")
    assert not halved and halved.first_divergence == {
        **halved.first_divergence,
        "name": site,
        "kind": "backward.parameter",
    }


def test_casts_saturate_instead_of_making_infinities():
    mask = torch.tensor([0.0, torch.finfo(torch.float32).min, -1e9, float("-inf")])
    for dtype in (torch.float16, torch.bfloat16):
        got = saturating_cast(mask, dtype)
        assert got[1] == torch.finfo(dtype).min and torch.isinf(got[3])
        assert got[2] == max(torch.finfo(dtype).min, -1e9)
    assert torch.isinf(mask.to(torch.bfloat16)[1])  # what a plain cast does


@pytest.mark.parametrize("spec", ["bert_min", "gemma2"])
def test_min_value_masks_pass_in_fp16_through_the_cli(tmp_path, monkeypatch, spec):
    """An fp32 finfo.min mask against its fp16 form: judged by what it does."""
    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    ref, low = tmp_path / "r", tmp_path / "l"
    assert _cli("dump", "-m", f"zoo_specs:{spec}", "-o", str(ref), "--inputs").exit_code == 0
    for dtype in ("fp16", "bf16"):
        assert _cli("dump", "-m", f"zoo_specs:{spec}", "-o", str(low), "--dtype", dtype).exit_code == 0
        result = compare_dumps(ref, low)
        assert result, (
            dtype,
            [(e["name"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3],
        )
        replayed = _cli(
            "replay", "-m", f"zoo_specs:{spec}", "--ref", str(ref), "--dtype", dtype, "-f", "json"
        )
        assert replayed.exit_code == 0, replayed.output[-500:]


def test_hf32_is_declared_on_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    out = tmp_path / "d"
    assert _cli("dump", "-m", "zoo_specs:bert_min", "-o", str(out), "--reduced-fp32", "hf32").exit_code == 0
    prec = json.loads((out / "manifest.json").read_text())["meta"]["precision"]
    assert (prec["matmul"], prec["conv"], prec["param_dtype"]) == ("hf32", "hf32", "float32")
    from migrate.core.errors import UsageError

    with pytest.raises(UsageError, match="--reduced-fp32 must be one of"):
        _cli("dump", "-m", "zoo_specs:bert_min", "-o", str(tmp_path / "e"), "--reduced-fp32", "tf31")


def test_move_keeps_integer_tensors_and_saturates_floats():
    got = move({"ids": torch.tensor([1, 2]), "m": torch.tensor([-3e38])}, "cpu", torch.float16)
    assert got["ids"].dtype == torch.int64 and got["m"].item() == -65504.0


def _mamba_step(out, mode="fp32", hook=None):
    import hf_zoo as Z

    model, args, kwargs = Z.build("mamba")
    if mode == "bf16":
        model = cast_model(model, torch.bfloat16)
    model.train()
    handles = [hook(model)] if hook else []
    with dump(model, out, grads=True):
        probe_loss(Z.main_output(model(*args, **kwargs))).backward()
    for h in handles:
        h.remove()
    return model, args, kwargs


def test_mamba_bf16_step_passes_and_a_wrong_backward_where_it_can_fire_fails(tmp_path):
    """Mamba's mixer uses ``conv1d.weight`` and ``dt_proj.weight`` in its own code: those
    layers never run as modules, so a backward hook on them is no fault (what the sweep
    injected). At a layer that runs, a 25 % wrong backward fails in bf16."""
    model, args, kwargs = _mamba_step(tmp_path / "r")
    ran = F.running_layers(model, args, kwargs)
    mixer = "backbone.layers.1.mixer"
    assert f"{mixer}.in_proj" in ran and f"{mixer}.conv1d" not in ran and f"{mixer}.dt_proj" not in ran
    site = F.backward_site(model, args, kwargs)
    assert site in ran
    _mamba_step(tmp_path / "h", "bf16")
    honest = compare_dumps(tmp_path / "r", tmp_path / "h")
    assert honest, [(e["name"], e["kind"], e["reason"]) for e in honest.entries if e["status"] == "fail"][:3]
    _mamba_step(tmp_path / "f", "bf16", lambda m: F.scale_grad_input(m, site, 1.25))
    wrong = compare_dumps(tmp_path / "r", tmp_path / "f")
    assert not wrong and wrong.first_divergence["name"] == site
    assert "scale_err" in wrong.first_divergence["reason"]


def test_a_tied_parameters_gradient_fault_names_every_holder(tmp_path):
    """GPT-2's ``lm_head.weight`` is ``transformer.wte.weight``: one parameter, one
    gradient (the sum of the embedding's and the head's use). Halving it is reported at
    the first holder with the other named, in the entry and in the text report; an untied
    weight's fault carries no such list."""
    from migrate.precision.report.text import render_text

    _train(tmp_path / "r")
    model = _train(tmp_path / "w", "bf16", hooks=[lambda m: F.scale_weight_grad(m, "lm_head", 0.5)])
    assert model.lm_head.weight is model.transformer.wte.weight
    halved = compare_dumps(tmp_path / "r", tmp_path / "w")
    first = halved.first_divergence
    assert not halved and first["kind"] == "backward.parameter"
    holders = {first["name"], *(t.rpartition(".")[0] for t in first["tied"])}
    assert holders == {"transformer.wte", "lm_head"}
    text = render_text(halved)
    assert "tied with" in text and all(h in text for h in holders)
    for e in halved.entries:  # only the tied weight's records carry the list
        tied_weight = e["kind"] == "backward.parameter" and e["name"] in holders and e["index"] == 0
        assert ("tied" in e) == tied_weight
    site = "transformer.h.1.mlp.c_fc"
    _train(tmp_path / "u", "bf16", hooks=[lambda m: F.scale_weight_grad(m, site, 0.5)])
    untied = compare_dumps(tmp_path / "r", tmp_path / "u").first_divergence
    assert untied["name"] == site and "tied" not in untied
