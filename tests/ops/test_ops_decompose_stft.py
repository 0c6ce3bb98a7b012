"""STFT (opset 17) of a real signal -> framed MatMul DFT, on a real torch.stft export."""

from __future__ import annotations

import warnings

import pytest

from migrate.ops.decompose.run import run_decompose
from migrate.ops.onnx_census import census

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")


class Spectrogram(torch.nn.Module):
    """|STFT| with a Hann window, as audio front ends compute it."""

    def forward(self, x):
        return torch.stft(x, n_fft=16, hop_length=4, window=torch.hann_window(16),
                          return_complex=True, center=True).abs()


def test_torch_stft_export_decomposes_and_verifies(tmp_path):
    src = tmp_path / "spec.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Spectrogram().eval(), (torch.randn(2, 64),), str(src),
                          opset_version=18, dynamo=True, verbose=False)
    assert {r["op"]: r["status"] for r in census(src)["ops"]}["STFT"] == "unsupported"
    report, code = run_decompose(src, tmp_path / "out.onnx")
    assert code == 0, report
    assert "stft-dft-matmul" in {r["rule"] for r in report["rewrites"]}
    assert report["remaining"] == []
    assert max(o["max_abs_error"] for o in report["verification"]["outputs"]) <= 1e-5
    ops = {n.op_type for n in onnx.load(str(tmp_path / "out.onnx")).graph.node}
    assert "STFT" not in ops and "MatMul" in ops


def test_stft_with_a_computed_frame_step_is_declined(tmp_path):
    from onnx import TensorProto, helper

    node = helper.make_node("STFT", ["x", "step", "", "n"], ["y"])
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 1]),
        helper.make_tensor_value_info("step", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("n", TensorProto.INT64, [], [8])])
    src = tmp_path / "in.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    report, code = run_decompose(src, tmp_path / "out.onnx", verify=False)
    assert code == 1 and "constant frame_step" in report["declined"][0]["why"]
