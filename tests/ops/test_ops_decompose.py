"""Decompositions on real graphs: ONNX's node test models and torch exports, checked
against onnxruntime and ONNX's expected outputs; results contain only supported ops."""

from __future__ import annotations

import numpy as np
import pytest
from ops_testlib import node_case

from migrate.ops.decompose.run import run_decompose
from migrate.ops.decompositions import load_all, rules_for
from migrate.ops.onnx_census import census
from migrate.ops.registry import load_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _feeds(model, inputs):
    names = [i.name for i in model.graph.input]
    return dict(zip(names, inputs, strict=False))


def _run(path, feeds):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _decompose_case(tmp_path, name, force=None):
    model, inputs, outputs = node_case(name)
    src, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(src))
    npz = tmp_path / "in.npz"
    np.savez(npz, **_feeds(model, inputs))
    report, code = run_decompose(src, out, inputs=npz, force=force)
    return report, code, out, _feeds(model, inputs), outputs


CASES = [
    "test_gelu_default_1",
    "test_gelu_default_2",
    "test_gelu_tanh_1",
    "test_gelu_tanh_2",
    "test_rms_normalization_3d_axis_negative_1_epsilon",
    "test_rms_normalization_4d_axis1",
    "test_rms_normalization_default_axis",
    "test_einsum_batch_matmul",
    "test_einsum_inner_prod",
]


@pytest.mark.parametrize("name", CASES)
def test_node_models_decompose_to_supported_ops(tmp_path, name):
    report, code, out, feeds, expected = _decompose_case(tmp_path, name)
    assert code == 0, report
    assert report["rewrites"], report
    assert report["opset"]["to"] <= 18
    after = census(out)
    assert after["summary"]["unsupported"] == after["summary"]["restricted"] == 0
    got = _run(out, feeds)
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_allclose(have, want, atol=1e-5, rtol=1e-5)
    assert all(o["max_abs_error"] <= 1e-5 for o in report["verification"]["outputs"])


@pytest.mark.parametrize(
    "name",
    [
        "test_layer_normalization_4d_axis1",
        "test_layer_normalization_3d_axis_negative_2_epsilon",
        "test_layer_normalization_2d_axis0",
    ],
)
def test_layer_norm_when_forced(tmp_path, name):
    # ATC has LayerNormalization at 17-18; --ops forces the rewrite (e.g. for ort-cann).
    report, code, out, feeds, expected = _decompose_case(tmp_path, name, force={"LayerNormalization"})
    assert code == 0, report
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "LayerNormalization" not in ops
    got = _run(out, feeds)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "test_mod_mixed_sign_int32",
        "test_mod_mixed_sign_float32",
        "test_mod_mixed_sign_float16",
        "test_mod_broadcast",
        "test_mod_float32_mixed_sign_fmod_0",
    ],
)
def test_mod_int_and_fmod(tmp_path, name):
    report, code, out, feeds, expected = _decompose_case(tmp_path, name, force={"Mod"})
    assert code == 0, report
    assert "Mod" not in {n.op_type for n in onnx.load(str(out)).graph.node}
    got = _run(out, feeds)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-5)


def test_float_mod_fmod0_blocks_lowering_so_it_is_rewritten(tmp_path):
    # Opset 28 float Mod with fmod=0 means floor-mod; at 18 it would be invalid, so the
    # pipeline rewrites it even without --ops.
    report, code, out, feeds, expected = _decompose_case(tmp_path, "test_mod_float32_mixed_sign_fmod_0")
    assert code == 0, report
    assert report["opset"]["to"] == 18 and report["rewrites"][0]["rule"] == "mod-arith"
    np.testing.assert_allclose(_run(out, feeds)[0], expected[0], atol=1e-5)


def test_mod_int64_declines_because_ascend_div_lacks_int64(tmp_path):
    report, code, out, _, _ = _decompose_case(tmp_path, "test_mod_int64_fmod", force={"Mod"})
    assert "Mod" in {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "INT64" in report["declined"][0]["why"]
    assert code == 0  # Mod itself is registered by ATC at opset 18


def test_torch_default_export_decomposes_and_lowers(tmp_path, exported):
    out = tmp_path / "out.onnx"
    report, code = run_decompose(exported["default"], out)
    assert code == 0, report
    assert report["opset"] == {"from": 20, "to": 18}
    assert [r["rule"] for r in report["rewrites"]] == ["gelu-erf"]
    assert census(out)["summary"]["unsupported"] == 0


def test_declined_rewrite_leaves_op_and_fails(tmp_path):
    # One-input Einsum (transpose) has no rewrite; the op stays and decompose exits 1.
    report, code, out, _, _ = _decompose_case(tmp_path, "test_einsum_transpose")
    assert code == 1
    assert report["declined"] and report["remaining"]


def test_tolerance_is_enforced(tmp_path):
    report, code, *_ = _decompose_case(tmp_path, "test_gelu_tanh_2")
    assert code == 0
    model, inputs, _ = node_case("test_gelu_tanh_2")
    src = tmp_path / "g.onnx"
    onnx.save(model, str(src))
    np.savez(tmp_path / "big.npz", x=(np.asarray(inputs[0]) * 1e4).astype(np.float32))
    report, code = run_decompose(src, tmp_path / "o.onnx", atol=0.0, inputs=tmp_path / "big.npz")
    errs = [o["max_abs_error"] for o in report["verification"]["outputs"]]
    assert code == (0 if max(errs) == 0.0 else 1)


def test_every_rule_emits_only_registry_supported_ops():
    reg = load_onnx("atc")
    table = load_all()
    assert {op for _, op in table} >= {"Gelu", "LayerNormalization", "RMSNormalization", "Einsum", "Mod"}
    for rules in table.values():
        for rule in rules:
            for op in rule.emits:
                assert reg.lookup(op, "ai.onnx", 18).status == "supported", (rule.name, op)
    assert [r.name for r in rules_for("Gelu")] == ["gelu-erf", "gelu-tanh"]


def test_rewrites_inside_if_branches(tmp_path):
    from onnx import TensorProto, helper

    def branch(name, approx):
        node = helper.make_node("Gelu", ["x"], [f"{name}_y"], approximate=approx)
        return helper.make_graph(
            [node], name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2, 3])]
        )

    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=branch("then", "none"), else_branch=branch("else", "tanh")
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    src = tmp_path / "if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), str(src))
    for flag in (False, True):  # random feeds exercise a scalar bool input; then each branch
        np.savez(
            tmp_path / "in.npz", c=np.array(flag), x=np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
        )
        report, code = run_decompose(src, tmp_path / "out.onnx", inputs=tmp_path / "in.npz")
        assert code == 0, report
    assert sorted(r["rule"] for r in report["rewrites"]) == ["gelu-erf", "gelu-tanh"]
    assert run_decompose(src, tmp_path / "out2.onnx")[1] == 0


def test_exported_attention_einsum_is_restricted_then_rewritten(tmp_path, exported_einsum):
    before = census(exported_einsum)
    row = next(r for r in before["ops"] if r["op"] == "Einsum")
    assert row["status"] == "restricted" and "bhqd,bhkd->bhqk" in row["reason"]
    out = tmp_path / "scores.onnx"
    report, code = run_decompose(exported_einsum, out)
    assert code == 0, report
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "Einsum" not in ops and "MatMul" in ops
    assert report["verification"]["outputs"][0]["max_abs_error"] <= 1e-5
