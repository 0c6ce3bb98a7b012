"""Attention (opset 23) -> MatMul/Softmax, on ONNX's own Attention node tests (against their
expected outputs) and on a real transformers export at opset 23 (ATC-clean, onnxruntime
equal within 1e-5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ops_testlib import node_case

from migrate.ops.decompose.run import run_decompose
from migrate.ops.onnx_census import census

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

COVERED = [
    "test_attention_4d_diff_heads_sizes_scaled",
    "test_attention_4d_gqa_causal",
    "test_attention_4d_attn_mask_3d_causal",
    "test_attention_4d_attn_mask_bool_4d",
    "test_attention_4d_gqa_softcap",
    "test_attention_4d_softcap_neginf_mask",
]
DECLINED = {
    "test_attention_4d_with_past_and_present": "past_key",
    "test_attention_4d_with_qk_matmul": "qk_matmul_output",
}


def _case(tmp_path, name):
    model, inputs, outputs = node_case(name)
    src = tmp_path / "in.onnx"
    onnx.save(model, str(src))
    feeds = dict(zip([i.name for i in model.graph.input], inputs, strict=False))
    np.savez(tmp_path / "in.npz", **feeds)
    report, code = run_decompose(src, tmp_path / "out.onnx", inputs=tmp_path / "in.npz")
    return report, code, feeds, outputs


@pytest.mark.parametrize("name", COVERED)
def test_attention_node_cases_match_onnx_expected_outputs(tmp_path, name):
    report, code, feeds, outputs = _case(tmp_path, name)
    assert code == 0, report
    assert [r["rule"] for r in report["rewrites"]] == ["attention-matmul"]
    got = ort.InferenceSession(str(tmp_path / "out.onnx"), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )
    np.testing.assert_allclose(got[0], outputs[0], atol=1e-5, rtol=1e-5)
    assert census(tmp_path / "out.onnx")["summary"]["unsupported"] == 0


@pytest.mark.parametrize("name, says", sorted(DECLINED.items()))
def test_uncovered_attention_forms_are_declined_with_the_reason(tmp_path, name, says):
    report, code, _, _ = _case(tmp_path, name)
    assert code == 1 and report["rewrites"] == []
    assert says in report["declined"][0]["why"]
    assert report["remaining"][0]["op"] == "Attention"


def test_bert_exported_at_opset_23_decomposes_to_atc_clean_opset_18(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
    )
    src = tmp_path / "bert.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            transformers.BertModel(cfg).eval(),
            (torch.randint(0, 64, (2, 8)),),
            str(src),
            opset_version=23,
            dynamo=True,
            verbose=False,
        )
    before = {r["op"]: r["status"] for r in census(src)["ops"]}
    assert before["Attention"] == "unsupported"
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert "attention-matmul" in {r["rule"] for r in report["rewrites"]}
    assert report["opset"] == {"from": 23, "to": 18} and report["remaining"] == []
    after = census(tmp_path / "out.onnx")
    assert after["summary"]["unsupported"] == after["summary"]["restricted"] == 0
    assert max(o["max_abs_error"] for o in report["verification"]["outputs"]) <= 1e-5
