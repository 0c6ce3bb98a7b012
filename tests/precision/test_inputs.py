"""Bad or incompatible input: one clear line and exit 2, never a traceback or a silently
looser gate; dtypes and in-place ops that used to crash the dumper."""

from __future__ import annotations

import json

import pytest
import torch
from test_cli import _main

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.thresholds import load_gate


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("dtypes:\n  bf16: {cosine_min: 0.99}\n", "'bf16' (did you mean 'bfloat16'?)"),
        ("dtypes:\n  float32: {cosine_mn: 0.99}\n", "'cosine_mn' (did you mean 'cosine_min'?)"),
        ("allowed_violation: 3\n", "'allowed_violation'"),
        ("overrides:\n  - {match: 'a*', mismatch: 0.5}\n", "overrides[0]: unknown key 'mismatch'"),
        ("dtypes:\n  float32: {cosine_min: high}\n", "dtypes.float32.cosine_min must be a number"),
        ("profile: loose\n", "profile 'loose'"),
    ],
)
def test_gate_file_typos_are_errors_naming_the_key(tmp_path, text, named):
    gate = tmp_path / "gate.yaml"
    gate.write_text(text)
    with pytest.raises(UsageError) as err:
        load_gate(gate)
    assert named in str(err.value)


def test_every_default_threshold_says_why():
    import yaml

    from migrate.precision.thresholds import DEFAULTS_FILE

    doc = yaml.safe_load(DEFAULTS_FILE.read_text())
    assert all(entry.get("why") for entry in doc["dtypes"].values())
    assert all(p.get("why") for p in doc["profiles"].values())
    assert load_gate().dtypes.keys() == doc["dtypes"].keys()


def test_broken_dumps_exit_2(tmp_path, make_dump, capsys):
    ref = make_dump("mlp_spec", tmp_path / "r")
    for name, edit in (
        ("fields", lambda d: d["records"][0].pop("kind")),
        ("records", lambda d: d.__setitem__("records", {"a": 1})),
        ("format", lambda d: d.__setitem__("format", 9)),
    ):
        bad = make_dump("mlp_spec", tmp_path / name)
        doc = json.loads((bad / "manifest.json").read_text())
        edit(doc)
        (bad / "manifest.json").write_text(json.dumps(doc))
        assert _main("compare", ref, bad) == 2, name
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("{not json")
    assert _main("compare", ref, tmp_path / "junk") == 2
    corrupt = make_dump("mlp_spec", tmp_path / "corrupt")
    shard = next(corrupt.glob("tensors-*.safetensors"))
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0xFF  # one byte of the last tensor
    shard.write_bytes(bytes(data))
    capsys.readouterr()
    assert _main("compare", ref, corrupt) == 2
    assert "checksum" in capsys.readouterr().err


def test_incompatible_dumps_exit_2(tmp_path, make_dump, capsys):
    mlp = make_dump("mlp_spec", tmp_path / "mlp")
    conv = make_dump("conv_spec", tmp_path / "conv")
    part = make_dump("mlp_spec", tmp_path / "part", include=["layers.*"])
    for other in (conv, part):
        capsys.readouterr()
        assert _main("compare", mlp, other) == 2
        assert capsys.readouterr().err.count("\n") == 1  # one line, no traceback


def test_dump_onto_a_file_is_a_clear_error(tmp_path, capsys):
    target = tmp_path / "out.json"
    target.write_text("{}")
    assert _main("dump", "--model", "prec_models:mlp_spec", "-o", target) == 2
    assert "not a folder" in capsys.readouterr().err and target.read_text() == "{}"


def test_grads_with_inplace_relu_and_wide_dtypes(tmp_path, build):
    model, args, _ = build("conv_spec")  # ReLU(inplace=True) after BatchNorm and conv2
    model.train()
    with dump(model, tmp_path / "g", grads=True) as d:
        model(*args).sum().backward()
    kinds = {r["kind"] for r in d.records}
    assert {"backward.grad_input", "backward.grad_output"} <= kinds
    relu_grads = [r for r in d.records if r["name"] == "relu" and r["kind"].startswith("back")]
    assert relu_grads and all(r["stats"]["norm"] > 0 for r in relu_grads)

    class Wide(torch.nn.Module):
        def forward(self, x):
            z = torch.complex(x, x.flip(-1))
            return {"f64": x * 2, "c64": z.to(torch.complex64), "c128": z * z}

    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    wide = Wide()
    for name in ("a", "b"):
        with dump(wide, tmp_path / name):
            wide(x)
    result = compare_dumps(tmp_path / "a", tmp_path / "b")
    assert result and {e["dtype"] for e in result.entries} == {"float64", "complex64", "complex128"}


def test_stats_only_finds_a_weight_fault_on_few_rows_and_passes_bf16(tmp_path, make_dump):
    """Norms alone move <1% for a 50% fault on 4 of 64 rows; the sketch sees it."""
    ref = make_dump("mlp_spec", tmp_path / "r", stats_only=True)
    bad = make_dump("mlp_spec", tmp_path / "t", stats_only=True, env={"PREC_PERTURB": "layers.3:0.5"})
    bf16 = make_dump("mlp_spec", tmp_path / "bf16", stats_only=True, dtype="bf16")
    full = make_dump("mlp_spec", tmp_path / "full")
    result = compare_dumps(ref, bad)
    assert not result and result.first_divergence["name"] == "layers.3"
    layer = next(e for e in result.entries if e["name"] == "layers.3")
    assert layer["norm_rel"] < 0.05 and layer["tier"] == "stats"
    assert "estimated" in layer["reason"]
    honest = compare_dumps(ref, bf16)
    assert honest, [e["reason"] for e in honest.entries if e["status"] != "pass"]
    assert compare_dumps(full, ref)  # a full dump against a stats-only one: sketched too
