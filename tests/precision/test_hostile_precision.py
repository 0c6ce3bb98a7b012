"""Dumps, gates and mappings as untrusted input (issue 18): a gate that cannot fail is an
error, every file option takes a bounded regular file, outputs never overwrite a dump."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from hostile import bounded_main, main

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.report import RENDERERS
from migrate.precision.thresholds import load_gate

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """(reference, perturbed) dumps of the MLP, written in this process."""
    import torch

    from migrate.precision.dumper import dump
    from migrate.precision.runner import prepare

    base = tmp_path_factory.mktemp("hostile")
    out = []
    for name, env in (("ref", {}), ("bad", {"PREC_PERTURB": "layers.2:0.05"})):
        os.environ.update(env)
        try:
            model, args, kwargs = prepare("prec_models:mlp_spec", "cpu", None)
        finally:
            for key in env:
                os.environ.pop(key)
        with torch.no_grad(), dump(model, base / name, inputs=True):
            model(*args, **kwargs)
        out.append(base / name)
    return tuple(out)


def _gate(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gate.yaml"
    p.write_text(text)
    return p


BAD_GATES = [
    "dtypes: {float32: {cosine_min: .nan, rel_err_max: .nan, mismatch_max: .nan}}",
    "dtypes: {float32: {cosine_min: -.inf}}",
    "dtypes: {float32: {cosine_min: 2}}",
    "dtypes: {float32: {rel_err_max: .inf}}",
    "dtypes: {float32: {rtol: -1}}",
    "dtypes: {default: {replay_mismatch_max: .nan}}",
    "overrides: [{match: '*', rel_err_max: .nan}]",
    "overrides: [{match: '*', skip: 'false'}]",
    "overrides: [{match: '*', cosine_min: true}]",
    "rel_floor: .nan",
    "rel_floor: .inf",
    "min_compared: .nan",
    "allowed_violations: .inf",
    "allowed_violations: 1.5",
    "fail_on_missing: 'no'",
    "profile: 7",
    "- a list",
    "dtypes: {float32: {cosine_min: '0.9'}}",
    "max_rel_err: " + "9" * 5000,  # past Python's int digit limit: was an internal error
    "overrides: [{match: '', skip: true}]",  # a glob that matches nothing: the override was dead
    "overrides: [{match: 'layers.[0', skip: true}]",
]


@pytest.mark.parametrize("text", BAD_GATES)
def test_a_gate_that_cannot_fail_is_an_error(tmp_path, text):  # repro: .nan thresholds
    with pytest.raises(UsageError):
        load_gate(_gate(tmp_path, text + "\n"))


def test_nan_gate_exits_2_where_the_default_gate_exits_1(tmp_path, dumps):
    ref, bad = dumps
    assert not compare_dumps(ref, bad)
    code, _, err = bounded_main("compare", ref, bad, "--gate", _gate(tmp_path, BAD_GATES[0]))
    assert code == 2 and len(err.strip().splitlines()) == 1, err


BOMB = "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB


@pytest.mark.parametrize("option", ["--gate", "--mapping"])
@pytest.mark.parametrize("content", ["fifo", "/dev/zero", "bomb", "bomb-value", "recursive", "huge", "dir"])
def test_gate_and_mapping_files_are_bounded(tmp_path, dumps, option, content):
    # repro: --gate FIFO hangs, /dev/zero and alias bombs exhaust memory
    ref, bad = dumps
    if content == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif content in ("/dev/zero",):
        path = Path(content)
    elif content == "dir":
        path = tmp_path
    else:
        text = {
            "bomb": BOMB + "dtypes: {float32: {why: *i}}\n",
            "bomb-value": BOMB.replace("a: &a", "why_a: &a").replace("\nb:", "\nwhy_b:")
            + "modules: *i\ndtypes: {float32: {cosine_min: *i}}\n",
            "recursive": "why: &r [*r]\nmodules: &m {x: *m}\ndtypes: &d {float32: *d}\n",
            "huge": "why: '" + "x" * (20 << 20) + "'\n",
        }[content]
        path = _gate(tmp_path, text)
    code, out, err = bounded_main("compare", ref, bad, option, path, seconds=900)
    assert code == 2, (out[-500:], err[-2000:])
    assert len(err.strip().splitlines()) == 1, err[-2000:]


def test_ranks_that_name_one_number_twice_are_an_error(tmp_path, dumps):  # repro: rank00
    ref, _ = dumps
    for side in ("R", "T"):
        for rank in ("rank0", "rank00", "rank1"):
            shutil.copytree(ref, tmp_path / side / rank)
    with pytest.raises(UsageError, match="rank"):
        compare_dumps(tmp_path / "R", tmp_path / "T")
    code, _, err = bounded_main("compare", tmp_path / "R", tmp_path / "T")
    assert code == 2 and "rank0/" in err and "rank00/" in err


@pytest.mark.parametrize("name", ["rank\u00b2", "rank\u0663", "rank1a"])
def test_a_dump_folder_that_only_looks_like_a_rank_is_reported(tmp_path, dumps, name):
    """rank²/ (a superscript two, not an ASCII digit) beside rank0/: one line, exit 2, never
    silently left out of the comparison."""
    ref, _ = dumps
    for side in ("R", "T"):
        for rank in ("rank0", name):
            shutil.copytree(ref, tmp_path / side / rank)
    code, _, err = bounded_main("compare", tmp_path / "R", tmp_path / "T")
    assert code == 2, err[-2000:]
    assert len(err.strip().splitlines()) == 1 and f"{name}/" in err and "not a rank folder" in err


@pytest.mark.parametrize("dtype", ["float16", "int64", "complex128"])
def test_a_record_whose_dtype_contradicts_its_tensor_is_refused(tmp_path, dumps, dtype):
    ref, _ = dumps
    bad = tmp_path / "bad"
    shutil.copytree(ref, bad)
    doc = json.loads((bad / "manifest.json").read_text())
    rec = next(r for r in doc["records"] if r.get("tensor") and r["dtype"] == "float32")
    rec["dtype"] = dtype  # the stored tensor stays float32
    (bad / "manifest.json").write_text(json.dumps(doc))
    code, _, err = bounded_main("compare", ref, bad, seconds=300)
    assert code == 2, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "is stored as F32" in lines[0] and f"says dtype {dtype}" in lines[0]
    assert rec["name"] in lines[0] or str(rec["call"]) in lines[0]


NAMES = ["a\x01b", "c\x1b[31md", "e\x00f", "g\ud800h", "i\ufffej", "k]]>l", "m\x7fn", "o\n::error::forged"]


def _renamed(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    doc = json.loads((dst / "manifest.json").read_text())
    names = {}
    for rec in doc["records"]:
        names.setdefault(rec["name"], NAMES[len(names) % len(NAMES)] + str(len(names)))
        rec["name"] = names[rec["name"]]
    doc["meta"].pop("weights", None)
    doc["meta"].pop("modules", None)
    (dst / "manifest.json").write_text(json.dumps(doc))
    return dst


def test_reports_carry_any_layer_name(tmp_path, dumps):  # repro: JUnit with control chars
    ref, bad = (_renamed(d, tmp_path / d.name) for d in dumps)
    result = compare_dumps(ref, bad)
    root = ET.fromstring(RENDERERS["junit"](result).encode("utf-8"))
    assert int(root.get("tests")) > 1
    for fmt in ("html", "markdown", "text", "json"):
        text = RENDERERS[fmt](result)
        text.encode("utf-8")  # no lone surrogates left
        if fmt == "json":
            json.loads(text)
        else:
            assert not any(line.startswith("::error") for line in text.splitlines()), fmt
    code, _, err = bounded_main("compare", ref, bad, "--format", "junit", "-o", tmp_path / "j.xml")
    assert code == 1, err
    ET.parse(tmp_path / "j.xml")


@pytest.mark.parametrize("target", ["manifest.json", "tensors-00000.safetensors", "."])
def test_compare_output_never_overwrites_a_dump(tmp_path, dumps, target):  # repro: -o R/manifest
    ref, bad = (Path(shutil.copytree(d, tmp_path / d.name)) for d in dumps)
    before = {p: p.read_bytes() for d in (ref, bad) for p in d.iterdir()}
    assert (ref / "tensors-00000.safetensors").exists()
    for out in (ref / target, bad / target):
        code, _, err = bounded_main("compare", ref, bad, "-o", out)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for d in (ref, bad) for p in d.iterdir()} == before


def test_gate_and_mapping_are_not_outputs(tmp_path, dumps):
    ref, bad = dumps
    gate = _gate(tmp_path, "allowed_violations: 100\n")
    mapping = tmp_path / "map.yaml"
    mapping.write_text("modules: {}\n")
    for args in (("--gate", gate, "-o", gate), ("--mapping", mapping, "-o", mapping)):
        code, _, err = bounded_main("compare", ref, bad, *args)
        assert code == 2, err
    assert gate.read_text() == "allowed_violations: 100\n"
    assert mapping.read_text() == "modules: {}\n"


def test_replay_output_never_overwrites_its_reference(tmp_path, dumps):
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    before = (ref / "manifest.json").read_bytes()
    code, _, err = bounded_main(
        "replay", "--model", "prec_models:mlp_spec", "--ref", ref, "-o", ref / "manifest.json"
    )
    assert code == 2, err
    assert (ref / "manifest.json").read_bytes() == before


@pytest.mark.parametrize(
    "doc",
    [
        '{"format": 1, "records": [' + "[" * 100000 + "]}",
        '{"format": 1, "records": "x"}',
        '{"format": 1, "records": [{"name": "a", "call": 0, "kind": '
        '"forward.output", "index": 0, "dtype": "float32", '
        '"shape": [1e400], "tensor": null}]}',
        '{"format": 1, "meta": {"weights": {"w": 5}}, "records": []}',
    ],
)
def test_corrupt_manifests_are_input_errors(tmp_path, dumps, doc):
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    (ref / "manifest.json").write_text(doc)
    code, _, err = bounded_main("compare", ref, dumps[1])
    assert code == 2 and len(err.strip().splitlines()) == 1, err[-2000:]


@pytest.mark.parametrize("kind", ["fifo", "dir", "link-out"])
def test_manifest_and_shards_must_be_regular_files(tmp_path, dumps, kind):
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    shard = ref / "tensors-00000.safetensors"
    shard.unlink()
    if kind == "fifo":
        os.mkfifo(shard)
    elif kind == "dir":
        shard.mkdir()
    else:
        os.symlink("/dev/zero", shard)
    code, _, err = bounded_main("compare", ref, dumps[1], seconds=900)
    assert code == 2 and len(err.strip().splitlines()) == 1, err[-2000:]


def test_a_repeated_record_is_an_input_error(tmp_path, dumps):  # beyond: a silent shadow
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    doc = json.loads((ref / "manifest.json").read_text())
    doc["records"].append(dict(doc["records"][0]))
    (ref / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="repeats"):
        compare_dumps(ref, dumps[1])


def test_a_tensor_that_is_not_its_record_is_an_input_error(tmp_path, dumps):
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    doc = json.loads((ref / "manifest.json").read_text())
    rec = next(r for r in doc["records"] if r.get("tensor") and len(r["shape"]) == 2)
    rec["shape"] = [rec["shape"][1], rec["shape"][0] + 1]
    (ref / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="record says"):
        compare_dumps(ref, dumps[1])


@pytest.mark.parametrize("tied", [[1], "lm_head.weight", ["x" * 5000], ["a"] * 100000])
def test_a_malformed_tied_list_is_an_input_error(tmp_path, dumps, tied):
    ref = Path(shutil.copytree(dumps[0], tmp_path / "ref"))
    doc = json.loads((ref / "manifest.json").read_text())
    doc["records"][0]["tied"] = tied
    (ref / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="tied must be a list of parameter names"):
        compare_dumps(ref, dumps[1])


@pytest.mark.parametrize("shard_mb", ["0", "-1"])
def test_dump_shard_size_must_be_positive(tmp_path, capsys, shard_mb):
    # 0 and -1 were accepted (exit 0): one shard per tensor, or a negative shift
    code, _, err = main(
        capsys, "dump", "-m", "prec_models:mlp_spec", "-o", tmp_path / "d", "--shard-mb", shard_mb
    )
    assert code == 2 and "--shard-mb" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("flag", ["--include", "--exclude"])
def test_dump_module_globs_are_checked_before_the_model_runs(tmp_path, flag):
    code, out, err = bounded_main("dump", "-m", "nope:fn", "-o", tmp_path / "out", flag, "blocks.[0")
    assert code == 2 and flag in err and "never closed" in err and err.count("\n") == 1
