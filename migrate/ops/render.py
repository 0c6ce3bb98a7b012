"""Render op coverage and decompose reports: json, text, markdown."""

from __future__ import annotations

import json
import re

from migrate.core.display import escape_lines, escape_strings, md_cell, md_text
from migrate.core.errors import UsageError

FORMATS = ("text", "json", "markdown")
_PLAIN_OP = re.compile(r"[\w.:-]+")  # an op name shown as code as it is
_ORDER = {"unsupported": 0, "cpu-fallback": 1, "restricted": 2, "supported": 3}


def _rows(report: dict) -> list[dict]:
    return sorted(report["ops"], key=lambda r: (_ORDER.get(r["status"], 9), -r["count"], r["op"]))


def _torch(report: dict) -> str:
    t = report.get("torch") or {}
    used = t.get("used") or "not used"
    want = t.get("registry_requires") or "unknown"
    return f"torch {used}; registry targets {want}"


def _title(report: dict) -> str:
    chip = f"; chip: {report['judged_for']}" if report.get("judged_for") else ""
    if "opset" in report and "backend" in report:
        return (
            f"{report['model']}: opset {report['opset']}, backend {report['backend']} "
            f"({report['target']}; {_torch(report)}{chip})"
        )
    return (
        f"{report['model']}: {report['target']} ({report.get('mode', 'eval')} step "
        f"captured on {report['device']}; {_torch(report)}{chip})"
    )


def _warning_lines(report: dict, prefix: str) -> list[str]:
    lines = []
    for w in report.get("warnings", []):
        at = f" at {', '.join(w['locations'][:2])}" if w.get("locations") else ""
        lines.append(
            f"{prefix}{w['kind']}: {w['op']} x{w['count']} in {', '.join(w['nodes'][:3])}{at}: {w['why']}"
        )
    lines += [f"{prefix}capture error: {e}" for e in report.get("errors", [])]
    return lines


def _summary(report: dict) -> str:
    s = report["summary"]
    return ", ".join(f"{s.get(k, 0)} {k}" for k in ("unsupported", "cpu-fallback", "restricted", "supported"))


def render_census(report: dict, fmt: str) -> str:
    """The op coverage report in ``fmt``; op, domain and node names come from the model:
    text and Markdown escape their control characters (a name cannot forge a log line)."""
    if fmt == "json":
        return _census(report, fmt)
    return escape_lines(_census(escape_strings(report), fmt))


def _census(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt == "markdown":
        return _census_markdown(report)
    if fmt != "text":
        raise UsageError(f"unknown --format {fmt!r}; choose {', '.join(FORMATS)}")
    lines = [_title(report)]
    for r in _rows(report):
        extra = f"  [decompose: {r['decomposition']}]" if r.get("decomposition") else ""
        where = (
            f"  at {r['nodes'][0]}" + (f" (+{len(r['nodes']) - 1})" if len(r["nodes"]) > 1 else "")
            if r["nodes"]
            else ""
        )
        notes = f" (note: {'; '.join(r['notes'])})" if r.get("notes") else ""
        lines.append(f"{r['status'].upper():<12} {r['op']} x{r['count']}{where}: {r['reason']}{notes}{extra}")
        if r.get("locations"):
            lines.append(f"{'':<13}dispatched from {', '.join(r['locations'])}")
        if r.get("rewrite"):
            fix = r["rewrite"]
            assisted = fix.get("safety") == "assisted"
            lines.append(
                f"{'':<13}rewrite{' (assisted: check the results)' if assisted else ''}: "
                f"{fix['from']} -> {fix['to']} ({fix['why']})"
                + (f"; differs: {fix['note']}" if fix.get("note") else "")
            )
    lines += _warning_lines(report, "warning: ")
    lines.append(f"summary: {_summary(report)}")
    lines += [f"advice: {a}" for a in report.get("advice", [])]
    return "\n".join(lines)


def _census_markdown(report: dict) -> str:
    """Every name from the model in a cell through ``md_cell`` (a ``|`` cannot add a column,
    a line break end the row, ``<img onerror=...>`` render), in other lines ``md_text``."""
    lines = [
        f"## Op coverage: {md_text(_title(report))}",
        "",
        "| status | op | count | reason | decomposition | nodes |",
        "|---|---|---|---|---|---|",
    ]
    for r in _rows(report):
        nodes = ", ".join(r["nodes"][:3]) + (" ..." if len(r["nodes"]) > 3 else "")
        cells = [r["status"], r["op"], str(r["count"]), r["reason"], r.get("decomposition") or "", nodes]
        shown = [md_cell(c) for c in cells]
        if _PLAIN_OP.fullmatch(r["op"]):
            shown[1] = f"`{r['op']}`"
        lines.append("| " + " | ".join(shown) + " |")
    lines += ["", f"**Summary:** {_summary(report)}"]
    lines += [md_text(line) for line in _warning_lines(report, "- warning ")]
    lines += [f"- {md_text(a)}" for a in report.get("advice", [])]
    return "\n".join(lines)


def render_decompose(report: dict, fmt: str) -> str:
    if fmt == "json":
        return _decompose(report, fmt)
    return escape_lines(_decompose(escape_strings(report), fmt))


def _decompose(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}; choose {', '.join(FORMATS)}")
    bullet = "- " if fmt == "markdown" else ""
    verdict = "PASS" if report["passed"] else "FAIL"
    lines = [
        f"{verdict} {report['model']} -> {report['output']} (opset "
        f"{report['opset']['from']} -> {report['opset']['to']}; {_torch(report)})"
    ]
    lines += [f"{bullet}rewrote {r['op']} {r['node']} with {r['rule']}" for r in report["rewrites"]]
    lines += [f"{bullet}kept {d['op']} {d['node']}: {d['why']}" for d in report["declined"]]
    lines += [
        f"{bullet}opset not lowered: {b['op']} {b['node']}: {b['why']}" for b in report["lowering_blockers"]
    ]
    lines += [
        f"{bullet}still {r['status']}: {r['op']} x{r['count']}: {r['reason']}" for r in report["remaining"]
    ]
    if report.get("check"):
        lines.append(f"{bullet}invalid output: {report['check']}")
    if not report.get("written", True):
        lines.append(f"{bullet}output not written: it failed the check or the verification")
    check = report.get("verification")
    if check:
        if check.get("error"):
            lines.append(f"{bullet}verification error: {check['error']}")
        for o in check["outputs"]:
            mark = "ok" if o["max_abs_error"] <= check["atol"] else "FAIL"
            lines.append(
                f"{bullet}{mark} output {o['name']}: max abs error "
                f"{o['max_abs_error']:.3g} (atol {check['atol']:g})"
            )
    if fmt == "markdown":  # node and output names are the model's: shown, never rendered
        lines = [md_text(line) for line in lines]
    return "\n".join(lines)
