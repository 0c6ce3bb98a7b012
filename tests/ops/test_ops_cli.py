"""`migrate ops` and `migrate decompose` exit codes and output shapes (docs/contracts.md §2, §4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ops_testlib import node_case
from typer.testing import CliRunner

from migrate.cli import app

onnx = pytest.importorskip("onnx")
SPECS = Path(__file__).with_name("specs.py")
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_ops_json_contract(exported, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("ops", exported["default"], "--format", "json", "-o", out)
    assert result.exit_code == 1
    report = json.loads(out.read_text())
    assert {"model", "opset", "ops", "summary"} <= set(report)
    for row in report["ops"]:
        assert {"op", "domain", "count", "nodes", "status", "reason", "decomposition"} <= set(row)
        assert row["status"] in ("supported", "unsupported", "cpu-fallback", "restricted")
    assert report["summary"]["unsupported"] == len(report["ops"])


def test_ops_exit_zero_when_all_supported(exported):
    result = invoke("ops", exported["opset18"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(str(exported["opset18"]))
    md = invoke("ops", exported["opset18"], "--format", "markdown")
    assert md.exit_code == 0 and "| supported | `Erf` |" in md.output


def test_ops_torch(tmp_path):
    ok = invoke("ops", "--torch", f"{SPECS}:supported", "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["summary"]["cpu-fallback"] == 0
    bad = invoke("ops", "--torch", f"{SPECS}:special")
    assert bad.exit_code == 1
    assert "CPU-FALLBACK aten::lgamma" in bad.output


@pytest.mark.parametrize(
    "args",
    [
        ["ops"],
        ["ops", "missing.onnx"],
        ["ops", "--torch", "no_such_module_xyz:make"],
        ["ops", "--torch", f"{SPECS}:raises"],
        ["ops", "--torch", f"{SPECS}:supported", "--dtype", "int3"],
        ["ops", "--bogus-flag"],
        ["decompose", "missing.onnx", "-o", "x.onnx"],
        ["ops", "--torch", f"{SPECS}:exits"],
        ["ops", "--torch", f"{SPECS}:generates"],
        ["ops", "--torch", f"{SPECS}:scripted"],
        ["ops", "--torch", f"{SPECS}:supported", "--soc", "ascend910b"],
    ],
)
def test_usage_errors_exit_2(args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output


def test_corrupt_model_exits_2_with_one_line(tmp_path, exported):
    data = exported["opset18"].read_bytes()
    bad = tmp_path / "trunc.onnx"
    bad.write_bytes(data[: len(data) // 3])
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "ops", str(bad)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    bad_fmt = invoke("ops", exported["opset18"], "--format", "xml")
    assert bad_fmt.exit_code == 2


def test_decompose_cli(tmp_path, exported):
    out = tmp_path / "d.onnx"
    ok = invoke("decompose", exported["default"], "-o", out, "--format", "json")
    assert ok.exit_code == 0, ok.output
    report = json.loads(ok.output)
    assert report["passed"] and report["verification"]["passed"]
    assert invoke("ops", out).exit_code == 0
    model, _, _ = node_case("test_einsum_transpose")
    src = tmp_path / "t.onnx"
    onnx.save(model, str(src))
    left = invoke("decompose", src, "-o", tmp_path / "t2.onnx")
    assert left.exit_code == 1
    assert left.output.startswith("FAIL")


def test_system_exit_in_forward_exits_2_with_one_line():
    # A real process: SystemExit must not escape as the tool's own exit status.
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "ops", "--torch", f"{SPECS}:exits"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 2, proc.stderr
    assert "SystemExit" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("fn, says", [("generates", "generator"), ("scripted", "TorchScript")])
def test_models_that_cannot_be_captured_say_why(fn, says):
    result = invoke("ops", "--torch", f"{SPECS}:{fn}")
    assert result.exit_code == 2 and says in result.output


def test_ops_torch_train_text_and_json(tmp_path):
    text = invoke("ops", "--torch", f"{SPECS}:fallbacks")
    assert text.exit_code == 1
    assert "dispatched from " in text.output and "rewrite: torch.linalg.inv(A)" in text.output
    assert "eval step captured on cpu; torch " in text.output.splitlines()[0]
    out = invoke("ops", "--torch", f"{SPECS}:with_loss", "--train", "--format", "json")
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["mode"] == "train" and report["torch"]["registry_requires"]
    assert {"warnings", "errors"} <= set(report)
    assert "train step captured" in invoke("ops", "--torch", f"{SPECS}:with_loss", "--train").output


def test_onnx_report_names_torch_and_soc(exported):
    result = invoke("ops", exported["opset18"], "--soc", "ascend910b", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["soc"] == "ascend910b" and "registry_requires" in report["torch"]
    assert invoke("ops", exported["opset18"], "--train").exit_code == 2
