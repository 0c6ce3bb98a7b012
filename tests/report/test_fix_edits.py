"""Fix edits in the JSON (`fix.edits`) and SARIF (`fixes`) reports of a real scan: each
range points at the text the fix replaces, and SARIF with fixes still validates."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from migrate.cli import app

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "train_amp"


def _report(fmt: str) -> dict:
    out = CliRunner().invoke(
        app,
        [
            "scan",
            "--target",
            "npu",
            str(SAMPLE),
            "--format",
            fmt,
            "--no-cache",
            "--exit-zero",
            "--no-progress",
        ],
    )
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def _slice(lines: list[str], line: int, col: int, end_line: int, end_col: int) -> str:
    if line == end_line:
        return lines[line - 1][col - 1 : end_col - 1]
    return "\n".join(
        [lines[line - 1][col - 1 :], *lines[line : end_line - 1], lines[end_line - 1][: end_col - 1]]
    )


def test_json_edits_replace_the_flagged_cuda_text():
    data = _report("json")
    fixed = [f for f in data["findings"] if f["fix"]]
    assert len(fixed) >= 10
    for f in fixed:
        lines = (SAMPLE / f["path"]).read_text(encoding="utf-8").splitlines()
        assert f["fix"]["edits"], f
        for e in f["fix"]["edits"]:
            old = _slice(lines, e["line"], e["column"], e["end_line"], e["end_column"])
            if f["rule"] in ("MIG101", "MIG201", "MIG202"):
                assert "cuda" in old and "npu" in e["content"], (f["rule"], old, e)
    device = next(f for f in fixed if f["rule"] == "MIG201")
    # "npu:0" names no torch_npu: the fix lists no import (apply adds none: torch_npu >= 2.5
    # loads itself with `import torch`)
    assert device["fix"]["imports"] == []


def test_sarif_fixes_mirror_the_json_edits():
    sarif = _report("sarif")
    data = _report("json")
    results = [r for r in sarif["runs"][0]["results"] if "fixes" in r]
    assert len(results) == sum(1 for f in data["findings"] if f["fix"])
    for r in results:
        (change,) = r["fixes"][0]["artifactChanges"]
        assert change["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        for rep in change["replacements"]:
            region = rep["deletedRegion"]
            assert region["startLine"] <= region["endLine"]
            assert isinstance(rep["insertedContent"]["text"], str)


def test_sarif_levels_follow_impact():
    sarif = _report("sarif")
    data = _report("json")
    by_key = {(f["rule"], f["line"], f["column"]): f["impact"] for f in data["findings"]}
    levels = {"crash": "error", "behaviour": "warning", "noop": "note", "perf": "note"}
    for r in sarif["runs"][0]["results"]:
        region = r["locations"][0]["physicalLocation"]["region"]
        impact = by_key[(r["ruleId"], region["startLine"], region["startColumn"])]
        assert r["level"] == levels[impact]
    got = {r["ruleId"]: r["level"] for r in sarif["runs"][0]["results"]}
    assert got["MIG401"] == "note"  # cudnn.benchmark: harmless on an NPU
    assert got["MIG201"] == "error"  # a "cuda" device: crashes on an NPU


def test_sarif_with_fixes_validates():
    from test_sarif import _validate

    _validate(_report("sarif"))
