"""Real transformers models (tiny configs): honest runs in every precision pass the default
gate, injected faults are found and their module named - by compare, by the weights
check, and by replay with caches on."""

from __future__ import annotations

import hf_models as H
import pytest
import torch

from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.replay import replay_model

pytest.importorskip("transformers")


_dump = H.dump_run


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    base = tmp_path_factory.mktemp("hf")
    out = {}
    for name in H.MODELS:
        _dump(base / name, name, inputs=True)
        out[name] = base / name
    return out


@pytest.mark.parametrize("name", H.MODELS)
def test_honest_runs_in_every_precision_pass(refs, tmp_path, name):
    for mode in ("other", "hf32", "bf16", "fp16"):
        _dump(tmp_path / mode, name, mode)
        result = compare_dumps(refs[name], tmp_path / mode)
        bad = [(e["name"], e["reason"]) for e in result.entries if e["status"] != "pass"]
        assert result and not bad and not result.weights, (mode, bad[:3], result.weights)
    judged = compare_dumps(refs[name], tmp_path / "hf32").precision
    assert judged["target"] == "hf32" and judged["reference"] == "float32"
    # the strict profile judges the HF32 run as fp32: it fails, as it should
    assert not compare_dumps(refs[name], tmp_path / "hf32", profile="strict")


@pytest.mark.parametrize("name", ["gpt2", "resnet", "t5"])
def test_weight_fault_is_named_by_compare_weights_and_replay(refs, tmp_path, name):
    site = H.FAULT_SITES[name]
    for mode in ("fp32", "bf16"):
        model, args, kwargs = _dump(tmp_path / mode, name, mode, fault=0.5)
        result = compare_dumps(refs[name], tmp_path / mode)
        assert not result and result.first_divergence["name"] == site
        assert [w["name"] for w in result.weights] == [f"{site}.weight"]
        replayed = replay_model(model, refs[name], args=args, kwargs=kwargs)
        assert replayed.culprit == {"name": site, "call": 0}, replayed.inconclusive


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_kernel_fault_in_cached_attention_is_the_culprit(refs, tmp_path, name):
    """Decoders pass a live DynamicCache to every attention layer (use_cache=True)."""
    site = H.ATTENTION_SITES[name]
    model, args, kwargs = _dump(tmp_path / "t", name, kernel_fault=0.02)
    assert kwargs["use_cache"] is True
    result = compare_dumps(refs[name], tmp_path / "t")
    assert not result and result.first_divergence["name"] == site and not result.weights
    replayed = replay_model(model, refs[name], args=args, kwargs=kwargs)
    assert replayed.culprit == {"name": site, "call": 0}
    assert replayed.replay_stats["compared"] == replayed.replay_stats["outputs"]
    clean, cargs, ckw = H.build(name)
    assert replay_model(clean, refs[name], args=cargs, kwargs=ckw).culprit is None


def test_replay_against_another_model_is_inconclusive(refs):
    model, args, kwargs = H.build("llama")
    result = replay_model(model, refs["gpt2"], args=args, kwargs=kwargs)
    assert result.culprit is None and not result and "compared" in result.inconclusive


def _train_step(out, name, mode="fp32", grad_fault=False):
    model, args, kwargs = H.build(name)
    model.train()  # BatchNorm on batch statistics, running stats updated in place
    if mode == "bf16":
        model, args, kwargs = H.cast(model, args, kwargs, torch.bfloat16)
    if grad_fault:  # 4% on every gradient flowing into one layer
        model.get_submodule(H.FAULT_SITES[name]).register_full_backward_pre_hook(
            lambda mod, go: tuple(None if g is None else g * 1.04 for g in go)
        )
    labels = (
        {"labels": torch.tensor([1, 2])}
        if name == "resnet"
        else {"labels": kwargs["decoder_input_ids"].clone()}
    )
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "autocast" else torch.enable_grad()
    with dump(model, out, grads=True):
        with ctx:
            loss = model(*args, **kwargs, **labels).loss
        loss.backward()


@pytest.mark.parametrize("name", ["resnet", "t5"])
def test_training_steps_judged_by_the_run_precision(tmp_path, name):
    """bf16 weights or bf16 autocast: the fp32 loss and gradients are judged as bf16."""
    _train_step(tmp_path / "r", name)
    for mode in ("bf16", "autocast"):
        _train_step(tmp_path / mode, name, mode)
        result = compare_dumps(tmp_path / "r", tmp_path / mode)
        assert result, [(e["name"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3]
        assert result.precision["target"] == "bfloat16" and not result.weights
    _train_step(tmp_path / "g", name, grad_fault=True)
    faulty = compare_dumps(tmp_path / "r", tmp_path / "g")
    assert not faulty and faulty.first_divergence["name"] == H.FAULT_SITES[name]
    assert faulty.first_divergence["kind"] == "backward.grad_output"


@pytest.mark.parametrize("name", ["gpt2", "t5", "convnext"])
def test_honest_replays_in_every_precision_name_no_culprit(refs, name):
    for mode in ("other", "hf32", "bf16", "fp16"):
        model, args, kwargs = H.build(name)
        if mode in ("bf16", "fp16"):
            model, args, kwargs = H.cast(
                model, args, kwargs, torch.bfloat16 if mode == "bf16" else torch.float16
            )
        ctx = {"hf32": H.hf32, "other": H.other_device}.get(mode)
        prec = H.HF32_META["precision"] if mode == "hf32" else None
        with ctx() if ctx else torch.no_grad():
            result = replay_model(model, refs[name], args=args, kwargs=kwargs, precision=prec)
        assert result and result.culprit is None and result.inconclusive is None, (
            mode,
            [(e["name"], e["reason"]) for e in result.entries if e["status"] == "fail"],
        )


def test_moe_routing_flips_in_low_precision_are_warnings_not_failures(tmp_path):
    """Mixtral in bf16/fp16 routes some near-tie tokens to another expert: the router's
    integer output differs and that MoE block's internals with it, honestly."""
    _dump(tmp_path / "r", "mixtral", inputs=True)
    flipped = 0
    for mode in ("bf16", "fp16"):
        _dump(tmp_path / mode, "mixtral", mode)
        result = compare_dumps(tmp_path / "r", tmp_path / mode)
        assert result, [(e["name"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3]
        flipped += sum("decision flipped" in e["reason"] for e in result.entries)
        judged = [e for e in result.entries if "rows whose decision did not flip they pass" in e["reason"]]
        assert all(e["status"] == "warn" for e in judged)
        flips = [e["name"] for e in result.entries if "a decision flipped" in e["reason"]]
        assert {name.rpartition(".")[0] for name in flips} <= {
            e["name"] for e in judged
        }  # each MoE block's output judged
    assert flipped  # the case exists in these runs
    model, args, kwargs = _dump(tmp_path / "bad", "mixtral", fault=0.5)
    bad = compare_dumps(tmp_path / "r", tmp_path / "bad")
    assert not bad and bad.first_divergence["name"] == H.FAULT_SITES["mixtral"]
    replayed = replay_model(model, tmp_path / "r", args=args, kwargs=kwargs)
    assert replayed.culprit == {"name": H.FAULT_SITES["mixtral"], "call": 0}


def test_a_fault_in_the_experts_after_an_honest_flip_is_caught(tmp_path):
    """bf16 Mixtral flips one token's top-2 in some layer (honest); experts there that
    compute 1.2x their output fail on the tokens whose decision did not flip, where the
    flip used to turn them into warnings (compare passed)."""
    _dump(tmp_path / "r", "mixtral")
    _dump(tmp_path / "bf16", "mixtral", "bf16")
    honest = compare_dumps(tmp_path / "r", tmp_path / "bf16")
    gate = next(e["name"] for e in honest.entries if "a decision flipped" in e["reason"])
    block = gate.rpartition(".")[0]
    model, args, kwargs = H.build("mixtral")
    model.get_submodule(f"{block}.experts").register_forward_hook(lambda m, i, o: o * 1.2)
    model, args, kwargs = H.cast(model, args, kwargs, torch.bfloat16)
    with torch.no_grad(), dump(model, tmp_path / "bad"):
        model(*args, **kwargs)
    bad = compare_dumps(tmp_path / "r", tmp_path / "bad")
    assert not bad and bad.first_divergence["name"] == f"{block}.experts"
    assert "rows whose decision did not flip: " in bad.first_divergence["reason"]
