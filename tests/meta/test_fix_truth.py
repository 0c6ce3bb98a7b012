"""One truth per finding: under every target, the fix a report describes is the fix the edit
makes. Every rule's examples are scanned under each port target; each fix's description
(what text, SARIF, Markdown and JSON reports show) must name what its edits write, and the
JSON and SARIF renderings must carry exactly those edits and imports.

"Names what the edit writes": the description holds the written text itself (quotes and
spacing aside), or, for an edit that writes a larger block (a helper, a call with its
arguments), one of the names that block brings in that the replaced text did not have.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from migrate.core.filekinds import detect
from migrate.core.rules import default_rules
from migrate.core.targets import TARGETS
from migrate.fix.run import engine_scan
from migrate.scan.ruleset import RuleSet

RULES = list(default_rules())
RULESET = RuleSet(RULES)
CASES = [
    (rule, i, ex)
    for rule in RULES
    if rule.kind != "onnx-census"
    for i, ex in enumerate(rule.examples)
    if "before" in ex
]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("'", '"')).strip()


def _new_names(content: str, replaced: str) -> set[str]:
    """Dotted names (and their last segments) written by an edit that the text it replaces
    did not hold."""
    out = set()
    for name in _NAME.findall(content):
        for part in (name, name.rsplit(".", 1)[-1]):
            if len(part) > 2 and part not in replaced:
                out.add(part)
    return out


def _binds(statement: str) -> str:
    """The name an import statement makes available ("import torch_npu" -> torch_npu)."""
    head, _, names = statement.partition(" import ")
    if head.startswith("from "):
        return names.split(" as ")[-1].split(",")[0].strip()
    return statement.removeprefix("import ").split(" as ")[-1].split(".")[0].strip()


def untruthful(text: str, fix) -> str | None:
    """Why ``fix`` does not say what it writes (None: it does): its description names what
    its edits write, and every import it lists is used by them."""
    written = "".join(e.content for e in fix.edits)
    unused = [s for s in fix.imports if not re.search(rf"\b{re.escape(_binds(s))}\b", written)]
    if unused:
        return f"lists imports its edits do not use: {unused}"
    description = _norm(fix.description)
    written = [(e, text[e.start : e.end]) for e in fix.edits if e.content.strip()]
    if not written:
        return (
            None
            if re.search(r"\b(remove|drop|delete)", description, re.I)
            else "removes text but does not say so"
        )
    if any(_norm(edit.content) in description for edit, _ in written):
        return None
    names = set().union(*(_new_names(e.content, r) for e, r in written))
    if any(n in description for n in names):
        return None
    shown = "; ".join(repr(e.content[:80]) for e, _ in written)
    return f"description {fix.description!r} names none of what the edits write: {shown}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rule,i,example", CASES, ids=[f"{r.code}-{i}" for r, i, _ in CASES])
def test_description_names_what_the_edit_writes(rule, i, example, target):
    name = example.get("file", "example.py")
    kind = detect(Path(name))
    text = example["before"]
    for finding in engine_scan(text, name, kind, RULESET, target):
        if finding.fix is None:
            continue
        why = untruthful(text, finding.fix)
        assert why is None, f"{finding.rule} at {finding.line}:{finding.column} ({target}): {why}"


@pytest.mark.parametrize("target", TARGETS)
def test_reports_carry_the_edits_the_fix_makes(target):
    """JSON's fix.edits/imports and SARIF's fixes come from the same Fix as the text."""
    from migrate.core.findings import ScanResult
    from migrate.report.sarif import to_dict

    findings = []
    for n, (_, _, example) in enumerate(CASES):  # one folder per example: paths stay apart
        name = example.get("file", "example.py")
        findings += [
            replace(f, path=f"{n}/{f.path}")
            for f in engine_scan(example["before"], name, detect(Path(name)), RULESET, target)
            if f.fix is not None
        ]
    assert findings
    for f in findings:
        data = f.to_json()["fix"]
        assert [e["content"] for e in data["edits"]] == [e.content for e in f.fix.edits]
        assert data["imports"] == list(f.fix.imports)
        assert data["description"] == f.fix.description
    results = to_dict(ScanResult(findings=findings), RULES)["runs"][0]["results"]
    by_key = {(f.path, f.line, f.column, f.rule): f for f in findings}
    for res in results:
        if "fixes" not in res:
            continue
        region = res["locations"][0]["physicalLocation"]["region"]
        f = by_key[
            (
                res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                region["startLine"],
                region["startColumn"],
                res["ruleId"],
            )
        ]
        (fix,) = res["fixes"]
        assert fix["description"]["text"].startswith(f.fix.description)
        replacements = fix["artifactChanges"][0]["replacements"]
        assert [r["insertedContent"]["text"] for r in replacements] == [e.content for e in f.fix.edits]
