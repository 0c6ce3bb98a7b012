"""decompose writes only valid, verified files: unique node names, local function bodies
rewritten and lowered, nothing left on disk when the check or verification fails; and the
GroupNormalization rule on a real transformers export (ReduceL2: test_ops_decompose_spectral)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from migrate.ops.decompose.run import run_decompose

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

F = TensorProto.FLOAT


def _vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def test_unnamed_nodes_get_unique_names_and_the_file_runs(tmp_path):
    nodes = [helper.make_node("Gelu", ["x"], ["a"]), helper.make_node("Gelu", ["a"], ["y"])]
    graph = helper.make_graph(nodes, "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    src, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), str(src))
    report, code = run_decompose(src, out)
    assert code == 0, report
    model = onnx.load(str(out))
    names = [n.name for n in model.graph.node]
    assert all(names) and len(set(names)) == len(names)
    onnx.checker.check_model(model, full_check=True)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got[0], want[0], atol=1e-6)


def test_local_function_bodies_are_rewritten_and_lowered(tmp_path):
    body = [helper.make_node("Gelu", ["x"], ["y"])]
    func = helper.make_function("local", "Act", ["x"], ["y"], body, [helper.make_opsetid("", 20)])
    graph = helper.make_graph(
        [helper.make_node("Act", ["x"], ["y"], domain="local")], "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])]
    )
    model = helper.make_model(
        graph, functions=[func], opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("local", 1)]
    )
    src, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(src))
    report, _ = run_decompose(src, out)
    assert [r["rule"] for r in report["rewrites"]] == ["gelu-erf"]
    assert report["written"] and report["verification"]["passed"]
    got = onnx.load(str(out))
    assert "Gelu" not in {n.op_type for n in got.functions[0].node}
    assert {o.version for o in got.functions[0].opset_import if o.domain == ""} == {18}


def test_a_failed_verification_leaves_no_output(tmp_path):
    nodes = [helper.make_node("Gelu", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    src, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), str(src))
    report, code = run_decompose(src, out, atol=-1.0)  # no result can pass a negative atol
    assert code == 1 and report["written"] is False and not report["passed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.onnx"]


def _export(module, args, path, opset):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), opset_version=opset, dynamo=True, verbose=False)
    return path


def test_wav2vec2_group_norm_export_at_opset_21_decomposes_and_verifies(tmp_path):
    """A real transformers model (tiny Wav2Vec2, group-norm feature encoder, random init)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        feat_extract_norm="group",
        num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
    )
    src = _export(transformers.Wav2Vec2Model(cfg).eval(), (torch.randn(1, 400),), tmp_path / "w2v.onnx", 21)
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert "group-norm" in {r["rule"] for r in report["rewrites"]}
    assert report["opset"] == {"from": 21, "to": 18} and report["remaining"] == []
    assert max(o["max_abs_error"] for o in report["verification"]["outputs"]) <= 1e-5
