"""SARIF: validates against the OASIS 2.1.0 schema; fingerprints survive line shifts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from report_samples import TRAIN_PY, UTIL_PY, findings_for

from migrate.core.findings import Finding, ScanResult
from migrate.report import render
from migrate.report.sarif import FINGERPRINT_KEY

REPO = Path(__file__).resolve().parents[2]


def _schema() -> dict:
    # <repo>/../shared/data in CI and in the main checkout; worktrees sit one level deeper.
    for base in (REPO.parent, REPO.parent.parent):
        path = base / "shared" / "data" / "sarif-schema-2.1.0.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    pytest.skip("shared/data/sarif-schema-2.1.0.json not found beside the repository")


def _validate(doc: dict) -> None:
    # This copy of the schema keeps the log's own schema under definitions/Root.
    schema = _schema()
    root = {**schema, "$ref": "#/definitions/Root"} if "Root" in schema["definitions"] else schema
    jsonschema.Draft7Validator(root).validate(doc)


def _sarif(result, rules, root=None) -> dict:
    return json.loads(render(result, "sarif", rules, root=root))


def test_sarif_validates_and_carries_rule_metadata(result, rules, project):
    doc = _sarif(result, rules, project)
    _validate(doc)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ascend-migrate" and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert ids == ["MIG101", "MIG120", "MIG301"]
    mig101 = driver["rules"][0]
    assert mig101["name"] == "torch-cuda-api"
    assert "## Why is this bad?" in mig101["help"]["markdown"]
    assert "no CUDA runtime" in mig101["help"]["text"]
    assert mig101["shortDescription"]["text"].startswith("Flags calls of `torch.cuda`")
    assert mig101["properties"]["category"] == "auto"
    assert [r["defaultConfiguration"]["level"] for r in driver["rules"]] == [
        "error",
        "warning",
        "error",
    ]  # by impact: crash, behaviour, crash
    # Every result points at its own rule, with relative URIs.
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert loc["artifactLocation"]["uri"].startswith("src/")
    first = run["results"][0]
    assert first["ruleId"] == "MIG120" and first["level"] == "warning"
    assert first["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 7,
        "startColumn": 37,
        "endLine": 7,
        "endColumn": 43,
    }
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/broken.py"


def test_schema_check_rejects_a_broken_region(result, rules, project):
    doc = _sarif(result, rules, project)
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def _prints(doc: dict) -> list[tuple[str, str, int]]:
    return [
        (
            r["ruleId"],
            r["partialFingerprints"][FINGERPRINT_KEY],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in doc["runs"][0]["results"]
    ]


def test_fingerprints_stable_when_lines_shift(result, rules, project):
    before = _prints(_sarif(result, rules, project))
    shifted_text = '"""Training entry point."""\n\nimport os\n' + TRAIN_PY
    (project / "src" / "train.py").write_text(shifted_text)
    shifted = ScanResult(findings=findings_for(shifted_text, UTIL_PY), files_scanned=3)
    after = _prints(_sarif(shifted, rules, project))
    assert [p[1] for p in before] == [p[1] for p in after]
    train = [(b, a) for b, a in zip(before, after, strict=True) if b[2] != a[2]]
    assert len(train) == 5 and all(a[2] == b[2] + 3 for b, a in train)
    # Two identical lines with the same rule still get distinct fingerprints.
    assert len({p[1] for p in before}) == len(before)


def test_fingerprint_changes_with_the_flagged_line(result, rules, project):
    before = dict((p[2], p[1]) for p in _prints(_sarif(result, rules, project))[:5])
    edited = TRAIN_PY.replace("torch.cuda.set_device(rank)", "torch.cuda.set_device(rank + 1)")
    changed = ScanResult(findings=findings_for(edited, UTIL_PY))
    after = dict((p[2], p[1]) for p in _prints(_sarif(changed, rules, project))[:5])
    assert before[8] != after[8]
    assert {k: v for k, v in before.items() if k != 8} == {k: v for k, v in after.items() if k != 8}


def test_fingerprint_reads_source_when_no_snippet(result, rules, project):
    with_root = _prints(_sarif(result, rules, project))
    result.findings = [
        replace(f, snippet=(project / f.path).read_text().splitlines()[f.line - 1]) for f in result.findings
    ]
    with_snippets = _prints(_sarif(result, rules, None))
    assert with_root == with_snippets


def test_sarif_odd_paths_unknown_rules_and_multiline_regions(rules):
    finding = Finding(
        rule="MIG999",
        name="mystery-rule",
        path="my dir/a#b.py",
        line=3,
        column=9,
        end_line=5,
        end_column=2,
        message="spans lines",
        category="manual",
        snippet="x = f(",
    )
    doc = _sarif(ScanResult(findings=[finding], files_scanned=1), rules)
    _validate(doc)
    res = doc["runs"][0]["results"][0]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "my%20dir/a%23b.py"
    assert loc["region"] == {"startLine": 3, "startColumn": 9, "endLine": 5, "endColumn": 2}
    assert doc["runs"][0]["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "MIG999"


def test_sarif_empty_scan_is_valid(rules):
    doc = _sarif(ScanResult(files_scanned=0), rules)
    _validate(doc)
    assert doc["runs"][0]["results"] == []
