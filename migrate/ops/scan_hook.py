"""`migrate scan` on *.onnx files: op census findings (rules/onnx.yaml, kind onnx-census)."""

from __future__ import annotations

import pathlib

from migrate.core.errors import UsageError
from migrate.core.findings import FileError, Finding

KIND = "onnx-census"


def _finding(rule, rel: str, **values) -> Finding:
    return Finding(
        rule=rule.code,
        name=rule.name,
        path=rel,
        line=1,
        column=1,
        end_line=1,
        end_column=1,
        message=rule.format_message(**values),
        category=rule.category,
        fix=None,
    )


def _when(row: dict) -> str | None:
    if row["status"] == "supported":
        return None
    if row.get("decomposition") and row["status"] in ("unsupported", "restricted"):
        return "decomposable"
    if row["domain"] not in ("ai.onnx",):
        return None  # reported once per domain by custom-domain
    return "unsupported" if row["status"] in ("unsupported", "cpu-fallback") else "restricted"


def scan_onnx(path: pathlib.Path, rel: str, rules) -> tuple[list[Finding], list[FileError]]:
    """Findings for one ONNX file; unreadable files are FileErrors, never exceptions."""
    by_when = {r.params.get("when"): r for r in rules if r.kind == KIND}
    if not by_when:
        return [], []
    try:
        import onnx  # noqa: F401
    except ImportError:
        return [], [FileError(rel, "ONNX findings need the 'onnx' extra (pip install ascend-migrate[onnx])")]
    from migrate.ops.onnx_census import census
    from migrate.ops.onnx_load import default_opset, load_graph
    from migrate.ops.registry import load_onnx

    try:
        model = load_graph(path)
        reg = load_onnx("atc")
        opset = default_opset(model)
        report = census(path, model=model, judge_opset=min(opset, reg.max_opset) or None)
    except UsageError as exc:
        return [], [FileError(rel, str(exc))]
    findings = []
    if opset > reg.max_opset and "opset-above" in by_when:
        findings.append(_finding(by_when["opset-above"], rel, opset=opset, max_opset=reg.max_opset))
    for row in report["ops"]:
        rule = by_when.get(_when(row))
        if rule is not None:
            findings.append(_finding(rule, rel, **row))
    custom = by_when.get("custom-domain")
    for domain in report["custom_domains"] if custom else ():
        ops = sorted({r["op"] for r in report["ops"] if r["domain"] == domain})
        findings.append(_finding(custom, rel, domain=domain, ops=", ".join(ops)))
    return findings, []
