"""Replay never passes gradients it did not check: a reference dumped with --grads has the
target's gradients compared, and a wrong one fails the replay with the record as the lead."""

from __future__ import annotations

import json

import faults as F
import hf_models as H
import pytest
import torch

from migrate.cli import app
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.replay import replay_model
from migrate.precision.report import RENDERERS
from migrate.precision.runner import backward_from, cast_model, move

pytest.importorskip("transformers")

SITE = H.FAULT_SITES["gpt2"]


def _gpt2(dtype=None):
    model, args, kwargs = H.build("gpt2")
    if dtype is not None:
        model = cast_model(model, dtype)
        args, kwargs = move(args, "cpu", dtype), move(kwargs, "cpu", dtype)
    return model, args, kwargs


def _dump(out, model, args, kwargs, **kw):
    with dump(model, out, grads=True, **kw):
        backward_from(model(*args, **kwargs))
    return out


def test_a_wrong_weight_gradient_fails_replay_with_the_record_as_lead(tmp_path):
    model, args, kwargs = _gpt2()
    ref = _dump(tmp_path / "r", model, args, kwargs, inputs=True)
    faulty, args, kwargs = _gpt2()
    F.scale_weight_grad(faulty, SITE, 0.5)
    # compare of a target dump fails on the weight gradient only
    compared = compare_dumps(ref, _dump(tmp_path / "t", faulty, args, kwargs))
    bad = {e["kind"] for e in compared.entries if e["status"] == "fail"}
    assert not compared and bad == {"backward.parameter"}
    result = replay_model(faulty, ref)
    assert not result and result.culprit is None and result.inconclusive is None
    backward = result.replay_stats["backward"]
    assert backward["replayed"] is False and backward["failing"] >= 1
    lead = backward["lead"][0]
    assert (lead["name"], lead["kind"], lead["parameter"]) == (SITE, "backward.parameter", "weight")
    text = RENDERERS["text"](result)
    assert "PASS replay" not in text and "backward records are not replayed" in text
    assert f"parameter {SITE}.weight" in text
    doc = json.loads(RENDERERS["json"](result))
    assert doc["gate"]["passed"] is False and doc["culprit"] is None
    assert any(v["kind"] == "backward.parameter" and v["name"] == SITE for v in doc["gate"]["violations"])


def test_honest_bf16_gradients_pass_replay(tmp_path):
    model, args, kwargs = _gpt2()
    ref = _dump(tmp_path / "r", model, args, kwargs, inputs=True)
    target, _, _ = _gpt2(torch.bfloat16)
    result = replay_model(target, ref, dtype=torch.bfloat16)
    backward = result.replay_stats["backward"]
    assert result, [(e["name"], e["kind"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3]
    assert backward["compared"] > 0 and backward["failing"] == 0
    assert "gradient(s) checked by a plain forward and backward" in RENDERERS["text"](result)


def test_cli_exits_1_on_a_gradient_only_fault_and_0_when_honest(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    run = CliRunner().invoke
    ref = str(tmp_path / "r")
    spec = "zoo_specs:custom_linear"
    assert run(app, ["dump", "-m", spec, "-o", ref, "--grads", "--inputs"]).exit_code == 0
    honest = run(app, ["replay", "-m", spec, "--ref", ref])
    assert honest.exit_code == 0, honest.output
    monkeypatch.setenv("PREC_WGRAD", "0.5")  # the custom Linear's weight gradient halved
    got = run(app, ["replay", "-m", spec, "--ref", ref, "-f", "json"])
    assert got.exit_code == 1, got.output
    doc = json.loads(got.output)
    assert doc["culprit"] is None and doc["inconclusive"] is None
    assert doc["replay"]["backward"]["lead"][0]["name"] == "mid"
    assert doc["replay"]["backward"]["lead"][0]["parameter"] == "weight"
