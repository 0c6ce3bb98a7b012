"""Decomposing TorchScript exports (``torch.onnx.export(..., dynamo=False)``), which name no
shapes between nodes: Einsum and STFT rewrite once the static shapes are inferred (through a
constant chain for STFT's reflect padding); and the random-input check feeds index inputs
(RoiAlign's batch indices, from column 0 of the float rois) indices that exist."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from migrate.ops.decompose.domains import _check, domains, valid_feeds
from migrate.ops.decompose.run import run_decompose
from migrate.ops.decompose.shapes import fill_shapes

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
ir = pytest.importorskip("onnx_ir")
from onnx import TensorProto, helper  # noqa: E402


def _export(module, args, path, opset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args, str(path), opset_version=opset, dynamo=False)
    return path


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        q = self.q(x).view(2, 5, 2, 4).transpose(1, 2)
        k = self.k(x).view(2, 5, 2, 4).transpose(1, 2)
        return torch.einsum("bhqd,bhkd->bhqk", q, k).softmax(-1)


def test_torchscript_einsum_is_rewritten(tmp_path):
    src = _export(Attention(), (torch.randn(2, 5, 8),), tmp_path / "att.onnx", 18)
    model = ir.load(str(src))
    einsum = next(n for n in model.graph if n.op_type == "Einsum")
    assert all(v.shape is None for v in einsum.inputs)  # what the exporter leaves
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert [r["rule"] for r in report["rewrites"]] == ["einsum-matmul"]
    assert report["verification"]["passed"] and report["remaining"] == []
    assert "Einsum" not in {n.op_type for n in onnx.load(str(tmp_path / "out.onnx")).graph.node}


class Spectrogram(torch.nn.Module):
    def __init__(self, center: bool):
        super().__init__()
        self.center = center

    def forward(self, x):
        spec = torch.stft(
            x, n_fft=16, hop_length=4, window=torch.hann_window(16), center=self.center, return_complex=False
        )
        return spec.pow(2).sum(-1)


@pytest.mark.parametrize("center", [False, True])
def test_torchscript_stft_is_rewritten(tmp_path, center):
    """center=False passes the [batch, length] signal itself; center=True reflect-pads it
    first, with pads computed by a chain of constants."""
    src = _export(Spectrogram(center), (torch.randn(2, 64),), tmp_path / "stft.onnx", 17)
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert [r["rule"] for r in report["rewrites"]] == ["stft-dft-matmul"]
    assert report["verification"]["passed"], report["verification"]
    assert report["verification"]["outputs"][0]["max_abs_error"] <= 1e-4


def test_declared_shapes_are_not_overridden(tmp_path):
    src = _export(Attention(), (torch.randn(2, 5, 8),), tmp_path / "att.onnx", 18)
    model, proto = ir.load(str(src)), onnx.load(str(src))
    out = model.graph.outputs[0]
    declared = out.shape
    assert fill_shapes(model, proto) > 0
    assert model.graph.outputs[0].shape == declared
    einsum = next(n for n in model.graph if n.op_type == "Einsum")
    assert [list(v.shape) for v in einsum.inputs] == [[2, 2, 5, 4], [2, 2, 5, 4]]


def _roi_model(dynamo: bool, images: int = 1, rois: int = 20):
    """torchvision's roi_align as its exporters write it: the batch index is column 0 of the
    float rois, cast to int64 (TorchScript: Gather + Squeeze + Cast; dynamo: Slice ...)."""
    nodes, inits = [], []
    if dynamo:
        inits = [
            helper.make_tensor(n, TensorProto.INT64, [1], [v])
            for n, v in (("s0", 0), ("e0", 1), ("ax", 1), ("s1", 1), ("e1", 5))
        ]
        nodes += [
            helper.make_node("Slice", ["rois", "s0", "e0", "ax"], ["c0"]),
            helper.make_node("Squeeze", ["c0", "ax"], ["c0s"]),
            helper.make_node("Cast", ["c0s"], ["bi"], to=TensorProto.INT64),
            helper.make_node("Slice", ["rois", "s1", "e1", "ax"], ["boxes"]),
        ]
    else:

        def const(name, values):
            t = helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
            return helper.make_node("Constant", [], [name], value=t)

        nodes += [
            const("k0", [0]),
            helper.make_node("Gather", ["rois", "k0"], ["c0"], axis=1),
            const("ax", [1]),
            helper.make_node("Squeeze", ["c0", "ax"], ["c0s"]),
            helper.make_node("Cast", ["c0s"], ["bi"], to=TensorProto.INT64),
            const("k1", [1, 2, 3, 4]),
            helper.make_node("Gather", ["rois", "k1"], ["boxes"], axis=1),
        ]
    nodes.append(
        helper.make_node(
            "RoiAlign", ["x", "boxes", "bi"], ["y"], output_height=2, output_width=2, sampling_ratio=2
        )
    )
    graph = helper.make_graph(
        nodes,
        "roi",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [images, 3, 8, 8]),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, [rois, 5]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("dynamo", [False, True])
def test_roi_align_batch_indices_are_valid(tmp_path, dynamo):
    from migrate.ops.verify import compare

    src = tmp_path / "roi.onnx"
    onnx.save(_roi_model(dynamo), str(src))
    plain = compare(src, src, 1e-5)  # the check's own random inputs: float batch indices
    assert not plain.passed and "batch_indices" in plain.error
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert report["verification"]["passed"] and report["verification"]["error"] is None
    feeds = valid_feeds(ir.load(str(src)))
    column = feeds["rois"][:, 0]
    assert (column == 0).all()  # one image: index 0 only
    assert not np.allclose(feeds["rois"][:, 1:], np.round(feeds["rois"][:, 1:]))  # boxes stay random


def test_index_range_follows_the_indexed_axis():
    model = ir.from_proto(_roi_model(False, images=3, rois=200))
    column = valid_feeds(model)["rois"][:, 0]
    assert set(column.tolist()) == {0.0, 1.0, 2.0}


def test_gather_indices_from_a_graph_input():
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("table", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("ids", TensorProto.INT64, [50]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    feeds = valid_feeds(ir.from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])))
    assert feeds["ids"].dtype == np.int64 and set(feeds["ids"].tolist()) == {0, 1, 2}


@pytest.mark.parametrize(
    "row,message",
    [
        (
            {"op": "RoiAlign", "input": 1, "name": "rois", "index_of": {"input": 0, "axis": 0}},
            "not an integer",
        ),
        ({"op": "RoiAlign", "input": 2, "name": "indices", "index_of": {"input": 0, "axis": 0}}, "is not"),
        ({"op": "NoSuchOp", "input": 0, "name": "x", "index_of": {"input": 0, "axis": 0}}, "not an ONNX"),
        ({"op": "Gather", "input": 1, "name": "indices", "index_of": {"input": 0}}, "exactly one"),
    ],
)
def test_domain_rows_are_checked_against_the_op_schema(row, message):
    with pytest.raises(ValueError, match=message):
        _check({**row, "source": "x"}, "row")
    assert "RoiAlign" in domains()
