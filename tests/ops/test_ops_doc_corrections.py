"""Verdicts the CANN operator docs correct (op_registry/onnx/atc/corrections.yaml), einsum
equations compared up to renaming, and the chip every report was judged for."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")

import numpy as np  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from migrate.ops.onnx_census import census  # noqa: E402
from migrate.ops.onnx_limits import einsum_canonical  # noqa: E402
from migrate.ops.registry import load_onnx  # noqa: E402


def _save(tmp_path, name, node, inputs, outputs, opset, inits=()):
    graph = h.make_graph([node], "g", inputs, outputs, initializer=list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def _row(path, op, soc=None):
    report = census(path, soc=soc)
    return next(r for r in report["ops"] if r["op"] == op), report


@pytest.mark.parametrize("dtype", [T.INT32, T.INT64])
def test_integer_range_is_supported_with_the_doc_as_source(tmp_path, dtype):
    """CLIP and Falcon exports build position ids with an int64 Range."""
    path = _save(
        tmp_path,
        "range",
        h.make_node("Range", ["s", "l", "d"], ["y"]),
        [h.make_tensor_value_info(n, dtype, []) for n in "sld"],
        [h.make_tensor_value_info("y", dtype, [None])],
        17,
    )
    row, _ = _row(path, "Range")
    assert row["status"] == "supported", row["reason"]
    assert "atlasoxol_09_0117" in row["reason"]


def test_int64_equal_is_supported(tmp_path):
    vals = [h.make_tensor_value_info(n, T.INT64, [3]) for n in "ab"]
    path = _save(
        tmp_path,
        "equal",
        h.make_node("Equal", ["a", "b"], ["y"]),
        vals,
        [h.make_tensor_value_info("y", T.BOOL, [3])],
        17,
    )
    for soc in (None, "ascend910b"):
        row, _ = _row(path, "Equal", soc)
        assert row["status"] == "supported" and "atlasoxol_09_0055" in row["reason"]


def test_equal_keeps_refusing_what_the_doc_does_not_list(tmp_path):
    vals = [h.make_tensor_value_info(n, T.BFLOAT16, [3]) for n in "ab"]
    path = _save(
        tmp_path,
        "equal_bf16",
        h.make_node("Equal", ["a", "b"], ["y"]),
        vals,
        [h.make_tensor_value_info("y", T.BOOL, [3])],
        17,
    )
    assert _row(path, "Equal")[0]["status"] == "restricted"


def test_reduce_l2_at_opset_18_is_supported_and_not_decomposed(tmp_path):
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    path = _save(
        tmp_path,
        "l2",
        h.make_node("ReduceL2", ["x", "axes"], ["y"], keepdims=1),
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 1])],
        18,
        [axes],
    )
    row, report = _row(path, "ReduceL2")
    assert row["status"] == "supported" and "atlasoxol_09_0120" in row["reason"]
    assert row["decomposition"] is None and report["summary"]["unsupported"] == 0


@pytest.mark.parametrize(
    ("equation", "status"),
    [
        ("ij,kj->ik", "supported"),
        ("ab,cb->ac", "supported"),
        ("xy, zy -> xz", "supported"),
        ("ij,jk->ik", "restricted"),
    ],
)
def test_einsum_equations_are_compared_up_to_renaming(tmp_path, equation, status):
    shapes = {"ij,jk->ik": ([2, 3], [3, 4])}.get(equation, ([2, 3], [4, 3]))
    path = _save(
        tmp_path,
        "einsum",
        h.make_node("Einsum", ["a", "b"], ["y"], equation=equation),
        [
            h.make_tensor_value_info("a", T.FLOAT, shapes[0]),
            h.make_tensor_value_info("b", T.FLOAT, shapes[1]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
        17,
    )
    row, _ = _row(path, "Einsum")
    assert row["status"] == status, row["reason"]
    if status == "restricted":
        assert f"equation={equation!r}" in row["reason"]  # the equation as written


def test_einsum_canonical_form():
    assert einsum_canonical("ij,kj->ik") == "ab,cb->ac"
    assert einsum_canonical("ij,kj") == "ab,cb->ac"  # implicit output: letters seen once, sorted
    assert einsum_canonical("bij,bjk->bik") == "abc,acd->abd"


def test_every_correction_names_an_op_and_a_page():
    reg = load_onnx("atc")
    assert set(reg.corrections) == {"Range", "Equal", "ReduceL2"}
    assert all(
        row["source"].startswith("https://www.hiascend.com/") and row["why"]
        for row in reg.corrections.values()
    )


def test_reports_name_the_chip_they_were_judged_for(tmp_path):
    path = _save(
        tmp_path,
        "relu",
        h.make_node("Relu", ["x"], ["y"]),
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
        17,
    )
    default = census(path)
    assert default["soc"] is None and default["judged_for"].startswith("any chip of the data (")
    assert "ascend910b" in default["judged_for"] and "--soc" in default["judged_for"]
    assert census(path, soc="ascend910b")["judged_for"] == "ascend910b"
