"""`migrate sensitivity --keep-out`: the ATC files name the nodes each kept unit made in
this model's ONNX graph, or nothing is written and the command says why (exit 2)."""

from __future__ import annotations

import ast
import importlib.util
import json
import warnings

import hf_models as H
import onnx
import pytest
import sens_specs as S
import torch

from migrate.cli import app
from migrate.core.errors import UsageError
from migrate.precision.sensitivity.autocast_file import render
from migrate.precision.sensitivity.emit import ascend_types

HERE = H.__file__.rsplit("/", 1)[0]


def _cli(*argv):
    from typer.testing import CliRunner

    return CliRunner().invoke(app, list(argv), catch_exceptions=False)


def _keep_out(tmp_path, monkeypatch, spec: str, *options: str, json_out: bool = True):
    """`migrate sensitivity -m sens_specs:SPEC OPTIONS --max-rel-err 1e-9 --keep-out KEEP`
    (with ``-f json``: ``json_out``) run from the specs' folder: (its result, KEEP)."""
    monkeypatch.chdir(HERE)
    keep = tmp_path / "keep"
    fmt = ["-f", "json"] if json_out else []
    res = _cli(
        "sensitivity",
        "-m",
        f"sens_specs:{spec}",
        *options,
        "--max-rel-err",
        "1e-9",
        "--keep-out",
        str(keep),
        *fmt,
    )
    return res, keep


def _report(res) -> dict:
    return json.loads(res.stdout[res.stdout.index("{") :])


def _lines(keep) -> list[str]:
    return (keep / "keep_dtype.cfg").read_text().splitlines()


def _export(model, args, path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=18)


def test_op_keep_set_names_every_node_the_kept_ops_made(tmp_path, monkeypatch):
    """Keeping linear, layer_norm, gelu and add: linears export as MatMul + Add (no Gemm),
    so a table from op kind to ONNX type found nothing for them; the files now list the
    nodes of each kept op, every one a node of model.onnx."""
    res, keep = _keep_out(tmp_path, monkeypatch, "norm_mlp", "--unit", "op")
    assert res.exit_code == 0, res.output[-800:]
    report = _report(res)
    kept = set(report["keep"]["units"])
    assert {"op:linear", "op:layer_norm", "op:gelu", "op:add"} <= kept
    files = report["files"]
    assert files["exporter"] == "torchscript" and files["error"] is None
    assert set(files["unit_nodes"]) == kept and all(files["unit_nodes"][u] > 0 for u in kept)
    types = {n.name: n.op_type for n in onnx.load(str(keep / "model.onnx")).graph.node}
    assert "Gemm" not in types.values()  # the case the static table missed
    lines = _lines(keep)
    assert lines and len(set(lines)) == len(lines) and all(line in types for line in lines)
    assert files["onnx_nodes"] == len(lines)
    # each Linear module's own nodes (its scope in the graph) are all kept, and they are MatMul + Add
    for module in ("up", "down", "head"):
        own = [n for n in types if n.startswith(f"/{module}/")]
        assert {types[n] for n in own} == {"MatMul", "Add"} and set(own) <= set(lines)
    # the functional gelu and the residual add sit at the root scope: all kept as well
    root = [n for n, t in types.items() if n.count("/") == 1 and t not in ("Constant", "Identity")]
    assert {"Erf", "Add"} <= {types[n] for n in root} and set(root) <= set(lines)
    assert files["unit_nodes"]["op:add"] == 1 and files["unit_nodes"]["op:linear"] == 6
    kept_types = {types[line] for line in lines}
    mixlist = json.loads((keep / "modify_mixlist.json").read_text())["black-list"]["to-add"]
    assert mixlist == ascend_types(kept_types)[0] and mixlist
    assert (keep / "quant_skip.txt").read_text() == ""  # op units name no module


def test_failed_export_writes_no_file_and_exits_2(tmp_path, monkeypatch):
    """HF Llama returning a DynamicCache: neither exporter takes it; no file, one error line
    naming the cause, exit 2 (never empty files and "wrote ...")."""
    res, keep = _keep_out(tmp_path, monkeypatch, "llama", "--max-units", "2", json_out=False)
    assert res.exit_code == 2, res.output[-800:]
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "DynamicCache" in errors[0] and "no files written" in errors[0]
    assert "TorchScript exporter" in errors[0] and "dynamo exporter" in errors[0]
    assert "wrote" not in res.stdout and "KEEP" in res.stdout  # the ranking is still reported
    assert not keep.exists() or not list(keep.iterdir())


def test_torchscript_failure_falls_back_to_the_dynamo_exporter(tmp_path, monkeypatch):
    """Llama without the cache: the TorchScript exporter stops at aten::diff (opset 18), the
    dynamo exporter succeeds and its nodes name their module scopes."""
    res, keep = _keep_out(tmp_path, monkeypatch, "llama_no_cache", "--max-units", "3")
    assert res.exit_code == 0, res.output[-800:]
    report = _report(res)
    assert report["files"]["exporter"] == "dynamo" and len(report["keep"]["modules"]) == 3
    graph = onnx.load(str(keep / "model.onnx")).graph
    scopes = {
        n.name: ast.literal_eval({p.key: p.value for p in n.metadata_props}["pkg.torch.onnx.name_scopes"])
        for n in graph.node
    }
    lines = _lines(keep)
    assert lines and all(line in scopes for line in lines)
    for module in report["keep"]["modules"]:  # every kept module has a line, and each line a kept module
        assert any(module in scopes[line] for line in lines)
    assert all(set(scopes[line]) & set(report["keep"]["modules"]) for line in lines)


def test_onnx_file_given_names_its_nodes_and_a_foreign_file_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(HERE)
    made = S.norm_mlp()
    mine = tmp_path / "mine.onnx"
    _export(made["model"], made["args"], mine)
    keep = tmp_path / "keep"
    argv = ("sensitivity", "-m", "sens_specs:norm_mlp", "--unit", "op", "--max-rel-err", "1e-9", "-f", "json")
    res = _cli(*argv, "--keep-out", str(keep), "--onnx", str(mine))
    assert res.exit_code == 0, res.output[-800:]
    files = _report(res)["files"]
    assert files["exporter"] == "file" and files["onnx"] == str(mine)
    assert not (keep / "model.onnx").exists()
    names = {n.name for n in onnx.load(str(mine)).graph.node}
    lines = _lines(keep)
    assert lines and all(line in names for line in lines)
    assert all(n > 0 for n in files["unit_nodes"].values()) and len(files["unit_nodes"]) >= 4
    # a file of another model: the kept ops have no node there, nothing is written
    other = S.overflow_mlp()
    theirs = tmp_path / "theirs.onnx"
    _export(other["model"], other["args"], theirs)
    res = _cli(*argv, "--keep-out", str(tmp_path / "k2"), "--onnx", str(theirs))
    assert res.exit_code == 2
    assert "have no node in the file ONNX graph" in res.stderr and "op:" in res.stderr
    assert not (tmp_path / "k2").exists()
    with pytest.raises(UsageError, match="give --keep-out"):  # --onnx alone: exit 2 before any work
        _cli(*argv, "--onnx", str(mine))


def _load_module(path):
    spec = importlib.util.spec_from_file_location(f"excl_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Scale(torch.nn.Module):
    """A leaf module with a keyword tensor argument; records the dtypes it was called with."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4, device=device))
        self.seen: list[tuple] = []

    def forward(self, x, *, shift):
        self.seen.append((x.dtype, shift.dtype, x.device.type))
        return x * self.weight + shift


class _Two(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Scale("cpu"), _Scale("meta")


def test_module_exclusion_binds_each_wrapper_to_its_own_module_and_casts_kwargs(tmp_path, monkeypatch):
    keep = [{"name": n, "kind": "module", "modules": [n]} for n in ("a", "b")]
    path = tmp_path / "m" / "autocast_exclude.py"
    path.parent.mkdir()
    path.write_text(render(keep, "bf16", 'pkg:spec """ {names} \\'))  # a hostile spec name stays data
    excl = _load_module(path)
    assert excl.KEEP_FP32 == ["a", "b"] and excl.MEASURED_ON == 'pkg:spec """ {names} \\'
    calls = []

    class Recorder:  # torch.autocast cannot take "meta": record what each wrapper asks for
        def __init__(self, device_type, enabled=True, **kw):
            calls.append((device_type, enabled))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(torch, "autocast", Recorder)
    model = excl.exclude_from_autocast(_Two())
    half = torch.ones(2, 4, dtype=torch.bfloat16)
    model.a(half, shift=half)
    model.b(half.to("meta", torch.float16), shift=half.to("meta", torch.float16))
    assert calls == [("cpu", False), ("meta", False)]  # not the last module's device twice
    assert model.a.seen == [(torch.float32, torch.float32, "cpu")]
    assert model.b.seen == [(torch.float32, torch.float32, "meta")]


def test_op_keep_set_exclusion_runs_the_kept_ops_in_fp32(tmp_path, monkeypatch):
    res, keep = _keep_out(tmp_path, monkeypatch, "norm_mlp", "--unit", "op")
    assert res.exit_code == 0, res.output[-800:]
    kept = [u[3:] for u in _report(res)["keep"]["units"]]
    excl = _load_module(keep / "autocast_exclude.py")
    assert excl.KEEP_FP32_OPS == kept and not hasattr(excl, "KEEP_FP32")
    assert excl.__doc__.startswith("Torch ops measured as sensitive to bf16")
    x = S.norm_mlp()["args"][0]
    with torch.no_grad():
        ref = S.norm_mlp()["model"](x)
    for exclude in (False, True):
        model = S.norm_mlp()["model"]
        if exclude:
            excl.exclude_from_autocast(model)
        dtypes: list = []
        model.up.register_forward_hook(lambda m, a, o, seen=dtypes: seen.append(o.dtype))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        err = float((out.float() - ref).norm() / ref.norm())
        assert dtypes == [torch.float32 if exclude else torch.bfloat16]
        assert (err < 1e-6) if exclude else (err > 1e-3), err


def test_the_report_says_what_each_file_keeps(tmp_path, monkeypatch):
    """Keeping the first two modules (a Linear and a LayerNorm): keep_dtype.cfg names
    exactly their nodes; the mixlist, type-level, keeps every MatMul and Add of the graph,
    most outside the keep set, and not the LayerNormalization node (a subgraph type) - the
    report counts both, from model.onnx."""
    monkeypatch.chdir(HERE)
    keep = tmp_path / "keep"
    argv = ("sensitivity", "-m", "sens_specs:norm_mlp", "--max-units", "2", "--max-rel-err", "1e-9")
    res = _cli(*argv, "--keep-out", str(keep), "-f", "json")
    assert res.exit_code == 0, res.output[-800:]
    files = _report(res)["files"]
    nodes = onnx.load(str(keep / "model.onnx")).graph.node
    lines = set(_lines(keep))
    mixlist = set(json.loads((keep / "modify_mixlist.json").read_text())["black-list"]["to-add"])
    typed = [n.name for n in nodes if set(ascend_types({n.op_type})[0]) & mixlist]
    outside = [n for n in typed if n not in lines]
    assert outside and files["keeps"]["mixlist_nodes"] == len(typed)
    assert files["keeps"]["mixlist_nodes_outside_keep"] == len(outside)
    assert files["keeps"]["keep_dtype"].startswith(f"{len(lines)} node(s) by name")
    assert files["subgraph_types_kept_by_name"] == ["LayerNormalization"]
    text = _cli(*argv, "--keep-out", str(tmp_path / "again")).stdout
    mix = next(line for line in text.splitlines() if "modify_mixlist.json" in line)
    assert f"({len(typed)} in this graph, {len(outside)} outside the kept units)" in mix
    assert "type-level" in mix and "not the 1 kept LayerNormalization node(s)" in mix
