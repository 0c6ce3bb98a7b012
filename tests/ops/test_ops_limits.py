"""ATC limits from the registry data (limits.yaml): every plugin error text is encoded or
explained, and real graphs that break one are `restricted` with the reason and source."""

from __future__ import annotations

import pytest

from migrate.core.errors import UsageError
from migrate.core.resources import op_registry_dir
from migrate.ops.onnx_census import census
from migrate.ops.registry import load_onnx, load_yaml

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def test_every_plugin_error_text_is_a_check_or_explained():
    from migrate.ops.onnx_limits import limits

    data = load_yaml(op_registry_dir() / "onnx/atc/limits.yaml")
    encoded = {(op, c["note"]) for op, cs in data["checks"].items() for c in cs if c.get("note")}
    explained = {(op, note) for op, notes in data["not_checked"].items() for note in notes}
    texts = {
        (op, n)
        for op, row in load_onnx("atc").ops.items()
        for n in row["notes"]
        if n.startswith("plugin error text")
    }
    assert texts - encoded - explained == set()
    assert (encoded | explained) - texts == set()  # no stale entries
    assert limits()  # parses with the typed schema


def _model(tmp_path, node, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph([node], "g", inputs, outputs, initializer=list(inits))
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def _status(path, op, soc=None):
    rows = [r for r in census(path, soc=soc)["ops"] if r["op"] == op]
    return rows[0]["status"], rows[0]["reason"]


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


F = TensorProto.FLOAT


@pytest.mark.parametrize(
    "node, ins, outs, status, says",
    [
        (
            helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2]),
            [vi("x", F, [1, 2, 8])],
            [vi("y", F, None)],
            "restricted",
            "kernel_shape",
        ),
        (
            helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]),
            [vi("x", F, [1, 2, 4, 4])],
            [vi("y", F, None), vi("i", TensorProto.INT64, None)],
            "restricted",
            "Indices",
        ),
        (
            helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]),
            [vi("x", F, [1, 2, 4, 4])],
            [vi("y", F, None)],
            "supported",
            "",
        ),
        (
            helper.make_node("ArgMax", ["x"], ["y"], select_last_index=1),
            [vi("x", F, [2, 3])],
            [vi("y", TensorProto.INT64, None)],
            "restricted",
            "select_last_index",
        ),
        (
            helper.make_node("ArgMax", ["x"], ["y"]),
            [vi("x", F, [2, 3])],
            [vi("y", TensorProto.INT64, None)],
            "supported",
            "",
        ),
        (
            helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="mul"),
            [vi("x", F, [4]), vi("i", TensorProto.INT64, [1, 1]), vi("u", F, [1])],
            [vi("y", F, None)],
            "restricted",
            "mul",
        ),
        (
            helper.make_node("TopK", ["x", "k"], ["v", "i"]),
            [vi("x", TensorProto.INT32, [5])],
            [vi("v", TensorProto.INT32, None), vi("i", TensorProto.INT64, None)],
            "restricted",
            "INT32",
        ),
    ],
)
def test_limits_on_graphs(tmp_path, node, ins, outs, status, says):
    inits = [helper.make_tensor("k", TensorProto.INT64, [1], [2])] if node.op_type == "TopK" else []
    path = _model(tmp_path, node, ins, outs, inits)
    got, reason = _status(path, node.op_type)
    assert got == status, reason
    assert says in reason
    if got == "restricted":
        assert "source: " in reason


def test_shape_inference_gives_dtypes_to_legacy_style_graphs(tmp_path):
    # Equal on int64 values that only shape inference can type (no value_info in the file).
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Equal", ["s", "s"], ["e"])]
    graph = helper.make_graph(nodes, "g", [vi("x", F, [2, 3])], [vi("e", TensorProto.BOOL, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    row = next(r for r in census(path)["ops"] if r["op"] == "Equal")
    assert row["dtypes"] == ["INT64"]


def test_soc_selects_per_chip_dtypes_and_unknown_soc_is_refused(tmp_path):
    reg = load_onnx("atc")
    assert "ascend910b" in reg.socs()
    path = _model(tmp_path, helper.make_node("Relu", ["x"], ["y"]), [vi("x", F, [2])], [vi("y", F, None)])
    assert census(path, soc="ascend910b")["soc"] == "ascend910b"
    with pytest.raises(UsageError, match="unknown --soc"):
        census(path, soc="gtx1080")
    with pytest.raises(UsageError, match="--backend atc"):
        census(path, backend="ort-cann", soc="ascend910b")


def test_external_data_outside_the_model_folder_is_refused(tmp_path):
    t = helper.make_tensor("w", F, [2], [1.0, 2.0])
    t.data_location = TensorProto.EXTERNAL
    t.ClearField("float_data")
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "8")):
        t.external_data.add(key=k, value=v)
    (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
    folder = tmp_path / "model"
    folder.mkdir()
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [vi("x", F, [2])],
        [vi("y", F, None)],
        initializer=[t],
    )
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(UsageError, match="leaves the model's folder"):
        census(path)
