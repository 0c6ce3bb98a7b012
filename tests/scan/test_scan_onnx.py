"""`migrate scan` reports ONNX models it finds in the tree (rules/onnx.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.scan.engine import ScanOptions, scan_paths

onnx = pytest.importorskip("onnx")


def _gelu_model(path: Path, opset: int) -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("Gelu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, path)


def test_scan_includes_onnx_models(tmp_path: Path):
    _gelu_model(tmp_path / "m20.onnx", 20)
    (tmp_path / "broken.onnx").write_bytes(b"\x08\x07garbage")
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    rules = sorted({(f.path, f.rule) for f in result.findings})
    assert ("m20.onnx", "MIG801") in rules
    assert ("train.py", "MIG202") in rules
    assert [e.path for e in result.errors] == ["broken.onnx"]
