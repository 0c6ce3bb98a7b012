"""Replay: a layer that introduces error is told apart from layers that inherit it."""

from __future__ import annotations

import pytest

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.replay import replay_model

SMALL = {"PREC_PERTURB_ONE": "l0:1.0"}  # one weight element of l0: < 1% of its outputs


def test_small_error_amplified_downstream_is_traced_to_its_layer(tmp_path, make_dump, build):
    ref = make_dump("wide_spec", tmp_path / "r", inputs=True)
    tgt = make_dump("wide_spec", tmp_path / "t", env=SMALL)
    compared = compare_dumps(ref, tgt)
    l0 = next(e for e in compared.entries if e["name"] == "l0")
    # compare alone: l0's error stays under the gate, l1 (which only inherits it) fails first
    assert l0["status"] in ("pass", "warn") and l0["max_abs"] > 0
    assert compared.first_divergence["name"] == "l1"
    model, _, _ = build("wide_spec", env=SMALL)
    replayed = replay_model(model, ref)
    assert replayed.culprit == {"name": "l0", "call": 0}
    l1 = next(e for e in replayed.entries if e["name"] == "l1")
    assert l1["status"] == "pass" and l1["max_abs"] == 0


def test_clean_model_replays_clean_with_kwargs_and_dataclass_outputs(tmp_path, make_dump, build):
    ref = make_dump("transformer_spec", tmp_path / "r", inputs=True)
    model, _, _ = build("transformer_spec")
    result = replay_model(model, ref)
    assert result.culprit is None and result
    names = {e["name"] for e in result.entries}
    assert {"blocks.0", "blocks.1.attn", "<root>"} <= names
    assert all(e["status"] == "pass" for e in result.entries)


def test_perturbed_attention_block_is_culprit(tmp_path, make_dump, build):
    ref = make_dump("transformer_spec", tmp_path / "r", inputs=True)
    model, _, _ = build("transformer_spec", env={"PREC_PERTURB": "blocks.1.mlp.0:0.05"})
    result = replay_model(model, ref)
    assert result.culprit == {"name": "blocks.1.mlp.0", "call": 0}


def test_bf16_replay_of_healthy_model_names_no_culprit(tmp_path, make_dump, build):
    import torch

    ref = make_dump("mlp_spec", tmp_path / "r", inputs=True)
    model, _, _ = build("mlp_spec", dtype="bf16")
    result = replay_model(model, ref, dtype=torch.bfloat16)
    assert result.culprit is None
    first = [e for e in result.entries if not e.get("exact")]
    assert first and all(e["dtype"] == "bfloat16" for e in first)
    # the second pass, at the reference's precision (the target lifted to float32)
    exact = [e for e in result.entries if e.get("exact")]
    assert exact and all(e["dtype"] == "float32" for e in exact)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())


def test_replay_needs_inputs(tmp_path, make_dump, build):
    ref = make_dump("mlp_spec", tmp_path / "r")
    model, _, _ = build("mlp_spec")
    with pytest.raises(UsageError, match="--inputs"):
        replay_model(model, ref)


def test_no_culprit_above_a_submodule_that_was_not_replayed(tmp_path, make_dump, build):
    """The reference lacks blocks.1.mlp (excluded): its fault shows in blocks.1's output
    (x + mlp(ln2(x))), but the block cannot be blamed for a child nobody replayed."""
    ref = make_dump(
        "transformer_spec", tmp_path / "r", inputs=True, exclude=["blocks.1.mlp", "blocks.1.mlp.*"]
    )
    model, _, _ = build("transformer_spec", env={"PREC_PERTURB": "blocks.1.mlp.0:0.5"})
    result = replay_model(model, ref)
    assert result.culprit is None and not result
    assert "blocks.1#0 fails" in result.inconclusive
    assert "blocks.1.mlp.0" in result.inconclusive.split("submodules")[1]
