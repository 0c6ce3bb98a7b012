"""Property tests for the ONNX loader (issue 18, item 8): random bytes, a valid model with
bytes flipped, random external-data entries. The census returns a report or raises one
UsageError; it never reads outside the model's folder."""

from __future__ import annotations

from functools import cache

import numpy as np
import onnx
from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from migrate.core.errors import UsageError
from migrate.ops.onnx_census import census


@cache
def _model_bytes() -> bytes:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Gelu", ["h"], ["y"], domain="")]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()


def _census(path) -> None:
    try:
        report = census(path)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert report["summary"]["ops"] == len(report["ops"])


@fuzz(100)
@given(data=st.binary(max_size=200))
def test_random_bytes(data, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    _census(path)


@fuzz(60)
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6))
def test_a_valid_model_with_bytes_changed(flips, tmp_path):
    data = bytearray(_model_bytes())
    for at, value in flips:
        data[at % len(data)] = value
    path = tmp_path / "m.onnx"
    path.write_bytes(bytes(data))
    _census(path)


@fuzz(100)
@given(
    entries=st.dictionaries(
        st.sampled_from(["location", "offset", "length", "checksum", "basepath"]),
        st.one_of(
            st.text(max_size=12),
            st.sampled_from(
                ["w.bin", "../w.bin", "/etc/passwd", "0", "64", "-1", "9" * 30, "w.bin\x00", ".", ""]
            ),
        ),
        max_size=4,
    )
)
def test_external_data_entries_are_data(entries, tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 64)
    model = onnx.load_from_string(_model_bytes())
    t = model.graph.initializer[0]
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries.items():
        t.external_data.add(key=k, value=v)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    _census(path)
