"""scan_onnx: census findings for `migrate scan` on real exported models."""

from __future__ import annotations

import pytest
from ops_testlib import node_case

from migrate.core.rules import load_rules, select_rules
from migrate.ops.scan_hook import scan_onnx

onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def rules():
    return [r for r in load_rules() if r.kind == "onnx-census"]


def test_default_export_gives_opset_and_decomposable_findings(exported, rules):
    findings, errors = scan_onnx(exported["default"], "m/block.onnx", rules)
    assert errors == []
    codes = [f.rule for f in findings]
    assert codes[0] == "MIG801" and "opset 20" in findings[0].message
    # Judged as if lowered to 18: only Gelu is left, and decompose can rewrite it.
    assert codes[1:] == ["MIG802"] and "Gelu" in findings[1].message
    assert all((f.line, f.column, f.path) == (1, 1, "m/block.onnx") for f in findings)
    assert findings[1].category == "assisted"


def test_supported_model_gives_nothing(exported, rules):
    assert scan_onnx(exported["opset18"], "ok.onnx", rules) == ([], [])


def test_loop_and_custom_domain_are_manual(tmp_path, rules):
    model, _, _ = node_case("test_loop11")
    path = tmp_path / "loop.onnx"
    onnx.save(model, str(path))
    findings, _ = scan_onnx(path, "loop.onnx", rules)
    assert [f.rule for f in findings] == ["MIG803"]
    assert findings[0].category == "manual" and "Loop" in findings[0].message


def test_unreadable_file_is_an_error_and_selection_is_respected(tmp_path, rules, exported):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    findings, errors = scan_onnx(bad, "bad.onnx", rules)
    assert findings == [] and errors and errors[0].path == "bad.onnx"
    only = select_rules(rules, ["MIG801"], None)
    findings, _ = scan_onnx(exported["default"], "m.onnx", only)
    assert [f.rule for f in findings] == ["MIG801"]
