"""Dump: manifest contract, stable indices, call numbering, copies, shards, stats-only."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from migrate.precision.dumper import dump
from migrate.precision.manifest import Dump

KEYS = {"name", "call", "kind", "index", "dtype", "shape", "stats", "tensor"}


def manifest(path):
    return json.loads((path / "manifest.json").read_text())


def test_manifest_matches_contract_and_tensors_equal_real_outputs(tmp_path, build):
    model, args, _ = build("mlp_spec")
    seen = {}
    handles = [
        layer.register_forward_hook(lambda m, a, o, i=i: seen.__setitem__(f"layers.{i}", o.clone()))
        for i, layer in enumerate(model.layers)
    ]
    with torch.no_grad(), dump(model, tmp_path / "d"):
        model(*args)
    for h in handles:
        h.remove()
    doc = manifest(tmp_path / "d")
    assert doc["format"] == 1 and doc["meta"]["weights_digest"].startswith("blake2b-crc32:")
    assert all(KEYS <= rec.keys() for rec in doc["records"])
    names = [r["name"] for r in doc["records"]]
    # execution order: each layer before its activation, the root last
    assert names[:4] == ["layers.0", "act", "layers.1", "act"] and names[-1] == "<root>"
    d = Dump(tmp_path / "d")
    for rec in doc["records"]:
        if rec["name"] in seen:
            assert torch.equal(d.tensor(rec), seen[rec["name"]])
            assert rec["stats"]["max"] == pytest.approx(float(seen[rec["name"]].max()))
            assert rec["stats"]["norm"] == pytest.approx(float(seen[rec["name"]].norm()), rel=1e-5)


def test_repeated_calls_are_numbered(tmp_path, make_dump):
    doc = manifest(make_dump("mlp_spec", tmp_path / "d"))
    calls = [r["call"] for r in doc["records"] if r["name"] == "act"]
    assert calls == list(range(6))


def test_dict_tuple_and_dataclass_outputs_get_stable_indices(tmp_path, make_dump):
    doc = manifest(make_dump("transformer_spec", tmp_path / "d"))
    root = [r for r in doc["records"] if r["name"] == "<root>"]
    assert [(r["index"], r["path"]) for r in root] == [(0, "logits"), (1, "attn.0"), (2, "attn.1")]
    block = [(r["index"], r["path"], r["shape"]) for r in doc["records"] if r["name"] == "blocks.0"]
    assert block == [(0, "hidden", [2, 10, 32]), (1, "attn", [2, 10, 10])]
    attn = [r["index"] for r in doc["records"] if r["name"] == "blocks.1.attn"]
    assert attn == [0, 1]  # MultiheadAttention returns (output, weights)


def test_inplace_op_after_hook_does_not_change_dump(tmp_path, make_dump):
    # ConvNet: bn's output is modified in place by ReLU(inplace=True) right after its hook.
    d = Dump(make_dump("conv_spec", tmp_path / "d"))
    bn = next(r for r in d.records if r["name"] == "bn")
    relu = next(r for r in d.records if r["name"] == "relu")
    assert float(d.tensor(bn).min()) < 0 and bn["stats"]["min"] < 0
    assert float(d.tensor(relu).min()) >= 0
    assert relu["tensor"] != bn["tensor"]


def test_unchanged_tensor_recorded_twice_is_stored_once(tmp_path, make_dump):
    d = Dump(make_dump("mlp_spec", tmp_path / "d", inputs=True))
    out0 = next(r for r in d.records if r["name"] == "act" and r["kind"] == "forward.output")
    nxt = next(r for r in d.records if r["name"] == "layers.1" and r["kind"] == "forward.input")
    assert out0["tensor"] == nxt["tensor"]
    assert torch.equal(d.tensor(out0), d.tensor(nxt))


def test_stats_only_writes_no_tensors(tmp_path, make_dump):
    out = make_dump("mlp_spec", tmp_path / "d", stats_only=True)
    doc = manifest(out)
    assert not list(out.glob("*.safetensors"))
    assert all(r["tensor"] is None for r in doc["records"])
    assert all(r["stats"]["norm"] > 0 for r in doc["records"])


def test_small_shards_are_flushed_incrementally(tmp_path, make_dump):
    out = make_dump("transformer_spec", tmp_path / "d", inputs=True, shard_bytes=4096)
    doc = manifest(out)
    files = sorted(p.name for p in out.glob("tensors-*.safetensors"))
    assert len(files) > 5 and files == sorted(doc["meta"]["files"])
    for rec in doc["records"]:
        with safe_open(str(out / rec["file"]), framework="pt") as f:
            assert list(f.get_tensor(rec["tensor"]).shape) == rec["shape"]


def test_include_exclude_inputs_and_grads(tmp_path, build):
    model, args, _ = build("mlp_spec")
    with dump(
        model, tmp_path / "d", inputs=True, grads=True, include=["layers.*"], exclude=["layers.5"]
    ) as d:
        model(*args).sum().backward()
    names = {r["name"] for r in d.records}
    kinds = {r["kind"] for r in d.records}
    assert names == {f"layers.{i}" for i in range(5)}
    assert kinds == {
        "forward.input",
        "forward.output",
        "backward.grad_input",
        "backward.grad_output",
        "backward.parameter",
    }
    weights = {(r["name"], r["path"]) for r in d.records if r["kind"] == "backward.parameter"}
    assert weights == {(f"layers.{i}", p) for i in range(5) for p in ("weight", "bias")}
    assert "layers.0#0" in manifest(tmp_path / "d")["input_specs"]


def test_weights_digest_tracks_weights(tmp_path, make_dump):
    a = manifest(make_dump("mlp_spec", tmp_path / "a", stats_only=True))["meta"]
    b = manifest(make_dump("mlp_spec", tmp_path / "b", stats_only=True))["meta"]
    c = manifest(
        make_dump("mlp_spec", tmp_path / "c", stats_only=True, env={"PREC_PERTURB": "layers.2:1e-6"})
    )["meta"]
    assert a["weights_digest"] == b["weights_digest"] != c["weights_digest"]


def test_nan_is_counted_in_stats(tmp_path, make_dump):
    doc = manifest(make_dump("mlp_spec", tmp_path / "d", env={"PREC_NAN": "1"}))
    rec = next(r for r in doc["records"] if r["name"] == "layers.1")
    assert rec["stats"]["nan"] == 8 and rec["stats"]["max"] is not None


def test_distributed_run_writes_per_rank_folder(tmp_path, build):
    import torch.distributed as dist

    model, args, _ = build("mlp_spec")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        with torch.no_grad(), dump(model, tmp_path / "d", stats_only=True) as d:
            model(*args)
    finally:
        dist.destroy_process_group()
    assert d.out_dir == tmp_path / "d" / "rank0"
    meta = manifest(d.out_dir)["meta"]
    assert (meta["rank"], meta["world_size"]) == (0, 1)


def test_weight_table_reuses_norm_and_sketch_only_for_unchanged_bytes():
    """The norm/sketch cache is keyed by the weight's CRC: a repeated table equals a fresh
    one, and a weight changed in place (even through ``.data``, which bumps no version)
    gets its own norm and sketch."""
    from migrate.precision import digest

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    digest._NORM_SKETCH.clear()
    fresh = digest.weight_table(model)
    assert digest.weight_table(model) == fresh
    model[0].weight.data.mul_(2)
    changed = digest.weight_table(model)
    digest._NORM_SKETCH.clear()
    assert digest.weight_table(model) == changed
    w = changed["0.weight"]
    assert w["crc"] != fresh["0.weight"]["crc"] and w["sketch"] != fresh["0.weight"]["sketch"]
    assert w["norm"] == pytest.approx(2 * fresh["0.weight"]["norm"])
    assert changed["1.weight"] == fresh["1.weight"]
