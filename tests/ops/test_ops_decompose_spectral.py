"""STFT and DFT -> MatMul with cos/sin matrices, on real torch.stft / torch.fft exports and
ONNX's DFT node test."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ops_testlib import node_case

from migrate.ops.decompose.run import run_decompose
from migrate.ops.onnx_census import census

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")


class Spectra(torch.nn.Module):
    """|STFT| with a Hann window (audio front ends), a real FFT (onesided) and a complex FFT,
    as torch.onnx exports them: STFT-17, DFT-20 and ReduceL2 (the magnitudes)."""

    def forward(self, x):
        spec = torch.stft(
            x, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True, center=True
        ).abs()
        fft = (
            torch.fft.rfft(x[:, :16], dim=-1).abs()
            + torch.fft.fft(x[:, :16].to(torch.complex64)).abs()[..., :9]
        )
        return spec.sum(-1) + fft


def test_torch_stft_and_fft_export_decomposes_and_verifies(tmp_path):
    src = tmp_path / "spec.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Spectra().eval(), (torch.randn(2, 64),), str(src), opset_version=20, dynamo=True, verbose=False
        )
    before = {r["op"]: r["status"] for r in census(src)["ops"]}
    assert before["STFT"] == before["DFT"] == before["ReduceL2"] == "unsupported"
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    rules = [r["rule"] for r in report["rewrites"]]
    # ReduceL2 is documented for opset 18: lowering the model to 18 is enough for it
    assert {"stft-dft-matmul", "dft-matmul"} <= set(rules) and "reduce-l2-sumsq" not in rules
    assert rules.count("dft-matmul") == 2
    assert report["opset"]["to"] == 18 and report["remaining"] == []
    assert max(o["max_abs_error"] for o in report["verification"]["outputs"]) <= 1e-5
    ops = {n.op_type for n in onnx.load(str(tmp_path / "out.onnx")).graph.node}
    assert not ops & {"STFT", "DFT"} and "ReduceL2" in ops and "MatMul" in ops


def test_stft_with_a_computed_frame_step_is_declined(tmp_path):
    from onnx import TensorProto, helper

    node = helper.make_node("STFT", ["x", "step", "", "n"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 1]),
            helper.make_tensor_value_info("step", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("n", TensorProto.INT64, [], [8])],
    )
    src = tmp_path / "in.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    report, code = run_decompose(src, tmp_path / "out.onnx", verify=False)
    assert code == 1 and "constant frame_step" in report["declined"][0]["why"]


def test_dft_node_case_matches_onnx_expected_output(tmp_path):
    import onnxruntime as ort

    model, inputs, outputs = node_case("test_dft_axis_opset19")
    src = tmp_path / "in.onnx"
    onnx.save(model, str(src))
    report, _ = run_decompose(src, tmp_path / "out.onnx", verify=False)
    assert [r["rule"] for r in report["rewrites"]] == ["dft-matmul"]
    got = ort.InferenceSession(str(tmp_path / "out.onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"x": inputs[0]}
    )
    np.testing.assert_allclose(got[0], outputs[0], rtol=1e-5, atol=1e-3)  # values ~1e2: fp32
