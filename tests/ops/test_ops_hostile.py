"""ONNX models as untrusted input (issue 18): declared sizes are bounded, external-data
entries are data, files are regular files, outputs never overwrite inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import bounded_main, main
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _huge(path: Path, dims) -> Path:
    """``y = Mul(x, 2.0)`` with ``x: float[dims]``: about a hundred bytes on disk."""
    two = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", F, [], [2.0]))
    graph = helper.make_graph(
        [two, helper.make_node("Mul", ["x", "c"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", F, dims)],
        [helper.make_tensor_value_info("y", F, dims)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_declared_sizes_are_bounded_in_ops(tmp_path):  # repro: 113-byte model, all memory
    m = _huge(tmp_path / "m.onnx", [2**40])
    code, out, err = bounded_main("ops", m, "--format", "json", memory_mb=4096)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert [row["op"] for row in doc["ops"]] == ["Constant", "Mul"]
    assert any("data propagation skipped" in a for a in doc["advice"]), doc["advice"]


@pytest.mark.parametrize("dims", [[2**20, 2**20], [2**62], [2**63 - 1]])
def test_declared_sizes_are_bounded_in_process(tmp_path, dims):
    from migrate.ops.onnx_census import census

    report = census(_huge(tmp_path / "m.onnx", dims))
    assert [row["op"] for row in report["ops"]] == ["Constant", "Mul"]


def test_shape_inference_runs_within_a_budget(tmp_path, monkeypatch):
    """Whatever a model makes inference do, the census goes on and says why."""
    from migrate.ops import onnx_census

    monkeypatch.setattr(onnx_census, "INFER_SECONDS", 0.5)
    monkeypatch.setattr(onnx_census, "_infer_bytes", lambda model, prop: __import__("time").sleep(30))
    report = onnx_census.census(_huge(tmp_path / "m.onnx", [8]))
    assert any("time budget" in a for a in report["advice"]), report["advice"]


def test_declared_sizes_are_bounded_in_decompose(tmp_path, capsys):  # repro: decompose
    m = _huge(tmp_path / "m.onnx", [2**40])
    code, out, err = main(capsys, "decompose", m, "-o", tmp_path / "o.onnx", "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["written"] is False and "elements" in doc["verification"]["error"]
    assert not (tmp_path / "o.onnx").exists()


def test_rewrites_never_build_constants_from_declared_sizes(tmp_path):
    from migrate.ops.decompose.build import MAX_CONST_ELEMENTS
    from migrate.ops.decompose.run import run_decompose

    seq = 1 << 20
    q = helper.make_tensor_value_info("q", F, [1, 1, seq, 8])
    graph = helper.make_graph(
        [helper.make_node("Attention", ["q", "q", "q"], ["y"], is_causal=1)],
        "g",
        [q],
        [helper.make_tensor_value_info("y", F, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "a.onnx"))
    report, code = run_decompose(tmp_path / "a.onnx", tmp_path / "o.onnx", verify=False)
    assert code == 1 and report["rewrites"] == []
    assert str(MAX_CONST_ELEMENTS) in json.dumps(report["declined"])


def _external(folder: Path, **info: str) -> Path:
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", F, [1, 4])],
        [helper.make_tensor_value_info("y", F, [1, 4])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = folder / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    if info:
        model = onnx.load(str(path), load_external_data=False)
        t = model.graph.initializer[0]
        entries = {e.key: e.value for e in t.external_data}
        entries.update(info)
        del t.external_data[:]
        for k, v in entries.items():
            t.external_data.add(key=k, value=v)
        path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize(
    "info",
    [
        {"offset": "abc"},
        {"length": "-5"},
        {"offset": "1e3"},
        {"location": "w\x00.bin"},
        {"location": "/etc/passwd"},
        {"location": ""},
        {"offset": "99999999999999999999999"},
        {"location": "."},
        {"location": "../w.bin"},
    ],
)
def test_bad_external_data_entries_are_input_errors(tmp_path, capsys, info):  # repro: offset, NUL
    m = _external(tmp_path, **info)
    for args in (("ops", m), ("decompose", m, "-o", tmp_path / "o.onnx")):
        code, _, err = main(capsys, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1


def test_outputs_never_overwrite_the_model_or_its_weights(tmp_path, capsys):  # repro: -o M
    m = _external(tmp_path)
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.ones((1, 4), np.float32))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for args in (
        ("ops", m, "-o", m),
        ("ops", m, "-o", tmp_path / "w.bin"),
        ("decompose", m, "-o", tmp_path / "w.bin"),
        ("decompose", m, "-o", m),
        ("decompose", m, "-o", tmp_path / "x.onnx", "--report", m),
        ("decompose", m, "-o", tmp_path / "x.onnx", "--report", tmp_path / "w.bin"),
        ("decompose", m, "-o", tmp_path / "x.onnx", "--report", tmp_path / "x.onnx"),
        ("decompose", m, "-o", npz, "--inputs", npz),
        ("ops", "--torch", "hostile:env", "-o", Path(__file__).parents[1] / "hostile.py"),
    ):
        code, _, err = main(capsys, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, args


def test_decompose_output_whose_weights_file_is_an_input(tmp_path, capsys):
    """-o x.onnx writes x.onnx.data beside it: that must not be the model's weights file."""
    m = _external(tmp_path)
    os.rename(tmp_path / "w.bin", tmp_path / "x.onnx.data")
    model = onnx.load(str(m), load_external_data=False)
    for e in model.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = "x.onnx.data"
    m.write_bytes(model.SerializeToString())
    before = (tmp_path / "x.onnx.data").read_bytes()
    code, _, err = main(capsys, "decompose", m, "-o", tmp_path / "x.onnx", "--ops", "MatMul")
    assert code == 2 and "x.onnx.data" in err, err
    assert (tmp_path / "x.onnx.data").read_bytes() == before


def test_npz_inputs_are_bounded(tmp_path, capsys, monkeypatch):
    from migrate.ops import verify

    m = _external(tmp_path)
    npz = tmp_path / "in.npz"
    np.savez_compressed(npz, x=np.zeros((1, 4096), np.float32))
    monkeypatch.setattr(verify, "MAX_INPUT_BYTES", 1024)
    code, _, err = main(capsys, "decompose", m, "-o", tmp_path / "o.onnx", "--inputs", npz)
    assert code == 2 and "decompressed" in err
    (tmp_path / "pickle.npz").write_bytes(b"PK\x03\x04 not a zip")
    code, _, err = main(
        capsys, "decompose", m, "-o", tmp_path / "o.onnx", "--inputs", tmp_path / "pickle.npz"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1


def _odd_inputs(tmp_path: Path, odd: Path) -> list[tuple]:
    m = _external(tmp_path)
    return [
        ("ops", odd),
        ("decompose", odd, "-o", tmp_path / "o.onnx"),
        ("decompose", m, "-o", tmp_path / "o.onnx", "--inputs", odd),
    ]


def test_a_fifo_is_never_opened(tmp_path):  # repro: decompose --inputs FIFO hangs
    os.mkfifo(tmp_path / "fifo")
    for args in _odd_inputs(tmp_path, tmp_path / "fifo"):
        code, _, err = bounded_main(*args, seconds=900)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("odd", ["/dev/zero", "."])
def test_model_and_inputs_must_be_regular_files(tmp_path, capsys, odd):
    for args in _odd_inputs(tmp_path, tmp_path / odd):
        code, _, err = main(capsys, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1


def test_names_from_a_model_cannot_forge_report_lines(tmp_path, capsys):
    evil = "Foo\x1b[31m\n::error file=x::forged"
    graph = helper.make_graph(
        [helper.make_node(evil, ["x"], ["y"], domain="evil\ndomain", name="n\r\x00")],
        "g",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("evil\ndomain", 1)]
    )
    onnx.save(model, str(tmp_path / "m.onnx"))
    for fmt in ("text", "markdown"):
        code, out, _ = main(capsys, "ops", tmp_path / "m.onnx", "--format", fmt)
        assert code == 1
        assert not any(line.startswith("::error") for line in out.splitlines())
        assert "\x1b" not in out and "\x00" not in out
    code, out, _ = main(capsys, "ops", tmp_path / "m.onnx", "--format", "json")
    assert json.loads(out)["ops"][0]["op"] == evil


@pytest.mark.parametrize("atol", ["inf", "nan", "-1"])
def test_a_verification_that_cannot_fail_is_refused(tmp_path, capsys, atol):
    m = _external(tmp_path)
    code, _, err = main(capsys, "decompose", m, "-o", tmp_path / "o.onnx", "--atol", atol)
    assert code == 2 and "--atol" in err


@pytest.mark.parametrize("version", [-5, 2**40])
def test_opset_versions_out_of_range_are_input_errors(tmp_path, capsys, version):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    for args in (
        ("ops", tmp_path / "m.onnx"),
        ("decompose", tmp_path / "m.onnx", "-o", tmp_path / "o.onnx", "--no-verify"),
    ):
        code, _, err = main(capsys, *args)
        assert code == 2 and "out of range" in err


@pytest.mark.parametrize("ops", ["Bogus", ",", "Gelu,Nope"])
def test_unknown_or_empty_op_names_are_errors(tmp_path, capsys, ops):
    m = _external(tmp_path)
    code, _, err = main(capsys, "decompose", m, "-o", tmp_path / "o.onnx", "--ops", ops)
    assert code == 2 and "--ops" in err


@pytest.mark.parametrize("backend", ["bogus", "ort-cann"])
def test_an_onnx_backend_with_torch_is_a_usage_error(capsys, backend):
    # --torch MOD:FN --backend bogus ran the model and exited 0: the option was ignored
    code, _, err = main(capsys, "ops", "--torch", "json:dumps", "--backend", backend)
    assert code == 2 and "--backend" in err and len(err.strip().splitlines()) == 1


def _md_cells(row: str) -> list[str]:
    """The cells of a GFM table row: split on the pipes a backslash does not escape."""
    import re

    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_node_names_cannot_break_a_markdown_table_or_inject_html(tmp_path, capsys):
    """A node named with a pipe, a line break and HTML: one row of six cells per op, the
    HTML shown as text (escaped), never rendered; the JSON keeps the name as it is."""
    evil = 'a|b\n<img src=x onerror="alert(1)">&amp;<script>x</script>'
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["y"], name=evil),
            helper.make_node("Unique", ["y"], ["z"], name="u|<b>bold</b>"),
        ],
        "g",
        [helper.make_tensor_value_info("x", F, [4])],
        [helper.make_tensor_value_info("z", F, None)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    _, out, _ = main(capsys, "ops", tmp_path / "m.onnx", "--format", "markdown")
    rows = [line for line in out.splitlines() if line.startswith("|") and not line.startswith("|---")]
    assert len(rows) == 3  # the header and one row per op
    assert all(len(_md_cells(row)) == 6 for row in rows), rows
    assert "<" not in out and "onerror=" in out and "&lt;img" in out and "&amp;amp;" in out
    relu = next(row for row in rows if "`Relu`" in row)
    assert _md_cells(relu)[5].startswith("a\\|b")
    _, out, _ = main(capsys, "ops", tmp_path / "m.onnx", "--format", "json")
    assert evil in [n for op in json.loads(out)["ops"] for n in op["nodes"]]
