"""SARIF 2.1.0 report that GitHub code scanning accepts.

* URIs are relative to the scan root, with ``uriBaseId: %SRCROOT%``; columns count Unicode
  code points (``columnKind: unicodeCodePoints``), end column exclusive as in SARIF.
* Levels follow the impact on an NPU (a rule-row field): crash -> error, behaviour ->
  warning, noop and perf -> note. The category (how it is fixed) is a property.
* ``partialFingerprints["migrateFinding/v1"]`` hashes rule, path, the finding's line text
  with whitespace collapsed, and the index of that (rule, path, text) among the file's
  findings. It does not use line numbers, so alerts keep their identity when code above
  them moves.
* Fixes are emitted as SARIF ``fixes`` (``artifactChanges`` with ``replacements``; GitHub
  ignores them, other viewers apply them); imports a fix needs are named in its
  description, since where they go is decided by `migrate apply`.
* Files that could not be read or parsed become ``toolExecutionNotifications``.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
from collections.abc import Sequence
from urllib.parse import quote

from migrate import __version__
from migrate.core.findings import Finding, Fix, ScanResult
from migrate.core.rules import Rule
from migrate.report.common import SourceLines, level, sorted_findings
from migrate.report.json_report import TOOL_NAME
from migrate.report.ruledoc import doc_markdown, fix_availability, short_description

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "migrateFinding/v1"
_SPACE = re.compile(r"\s+")


def _descriptor(rule: Rule) -> dict:
    doc = doc_markdown(rule)
    full = rule.doc.get("what", "").strip() or short_description(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": short_description(rule)},
        "fullDescription": {"text": full},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": level(rule.impact, rule.category)},
        "properties": {
            "category": rule.category,
            "impact": rule.impact,
            "kind": rule.kind,
            "fix": fix_availability(rule),
            "tags": ["ascend-migrate", "cuda-to-npu", rule.category],
        },
    }


def _stub_descriptor(finding: Finding) -> dict:
    """For a finding whose rule is not in the rule list (should not happen, stay valid)."""
    return {
        "id": finding.rule,
        "name": finding.name,
        "shortDescription": {"text": finding.name.replace("-", " ") or finding.rule},
        "defaultConfiguration": {"level": level(finding.impact, finding.category)},
        "properties": {"category": finding.category, "tags": ["ascend-migrate"]},
    }


def normalize(line: str) -> str:
    return _SPACE.sub(" ", line).strip()


def fingerprints(findings: Sequence[Finding], sources: SourceLines) -> list[str]:
    """Stable fingerprint per finding (same order as ``findings``, which must be sorted)."""
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for f in findings:
        line = sources.line(f)
        text = normalize(line) if line is not None else normalize(f.message)
        key = (f.rule, f.path, text)
        index = seen.get(key, 0)
        seen[key] = index + 1
        digest = hashlib.sha256("\0".join([*key, str(index)]).encode("utf-8", "surrogateescape")).hexdigest()
        out.append(digest[:32])
    return out


def uri(path: str) -> str:
    return quote(path.replace("\\", "/"), safe="/", errors="surrogateescape")


def _region(f: Finding) -> dict:
    end_line = max(f.end_line, f.line)
    end_col = f.end_column if end_line > f.line else max(f.end_column, f.column)
    return {
        "startLine": max(f.line, 1),
        "startColumn": max(f.column, 1),
        "endLine": max(end_line, 1),
        "endColumn": max(end_col, 1),
    }


def _result(f: Finding, index: int | None, fingerprint: str) -> dict:
    out: dict = {"ruleId": f.rule}
    if index is not None:
        out["ruleIndex"] = index
    out.update(
        {
            "level": level(f.impact, f.category),
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(f.path), "uriBaseId": "%SRCROOT%"},
                        "region": _region(f),
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
            "properties": {
                "category": f.category,
                "impact": f.impact,
                "fix": f.fix.applicability if f.fix else "none",
                "npu_aware": f.npu_aware,
                "target": f.target,
            },
        }
    )
    if f.fix is not None and f.fix.ranges:
        out["fixes"] = [_fix(f, f.fix)]
    return out


def _fix(f: Finding, fix: Fix) -> dict:
    text = fix.description
    if fix.imports:
        text += f" (adds: {'; '.join(fix.imports)})"
    return {
        "description": {"text": text},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri(f.path), "uriBaseId": "%SRCROOT%"},
                "replacements": [
                    {
                        "deletedRegion": {
                            "startLine": r[0],
                            "startColumn": r[1],
                            "endLine": r[2],
                            "endColumn": r[3],
                        },
                        "insertedContent": {"text": e.content},
                    }
                    for e, r in zip(fix.edits, fix.ranges)
                ],
            }
        ],
    }


def to_dict(result: ScanResult, rules: Sequence[Rule], root: pathlib.Path | None = None) -> dict:
    findings = sorted_findings(result.findings)
    descriptors = [_descriptor(r) for r in sorted(rules, key=lambda r: r.code)]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    for f in findings:
        if f.rule not in index:
            index[f.rule] = len(descriptors)
            descriptors.append(_stub_descriptor(f))
    prints = fingerprints(findings, SourceLines(root))
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": uri(e.path), "uriBaseId": "%SRCROOT%"}}}
            ],
        }
        for e in sorted(result.errors, key=lambda e: e.path)
    ]
    run = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": __version__,
                "semanticVersion": __version__,
                "rules": descriptors,
            }
        },
        "columnKind": "unicodeCodePoints",
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": notifications,
                "properties": {"target": result.target},
            }
        ],
        "results": [_result(f, index.get(f.rule), fp) for f, fp in zip(findings, prints, strict=True)],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_sarif(result: ScanResult, rules: Sequence[Rule], root: pathlib.Path | None = None) -> str:
    return json.dumps(to_dict(result, rules, root), indent=2, ensure_ascii=False) + "\n"
