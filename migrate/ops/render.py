"""Render op coverage and decompose reports: json, text, markdown."""

from __future__ import annotations

import json

from migrate.core.errors import UsageError

FORMATS = ("text", "json", "markdown")
_ORDER = {"unsupported": 0, "cpu-fallback": 1, "restricted": 2, "supported": 3}


def _rows(report: dict) -> list[dict]:
    return sorted(report["ops"], key=lambda r: (_ORDER.get(r["status"], 9), -r["count"], r["op"]))


def _title(report: dict) -> str:
    if "opset" in report and "backend" in report:
        return (f"{report['model']}: opset {report['opset']}, backend {report['backend']} "
                f"({report['target']})")
    return f"{report['model']}: {report['target']} (captured on {report['device']})"


def _summary(report: dict) -> str:
    s = report["summary"]
    return ", ".join(f"{s.get(k, 0)} {k}" for k in ("unsupported", "cpu-fallback",
                                                     "restricted", "supported"))


def render_census(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt == "markdown":
        lines = [f"## Op coverage: {_title(report)}", "",
                 "| status | op | count | reason | decomposition | nodes |",
                 "|---|---|---|---|---|---|"]
        for r in _rows(report):
            nodes = ", ".join(r["nodes"][:3]) + (" ..." if len(r["nodes"]) > 3 else "")
            lines.append(f"| {r['status']} | `{r['op']}` | {r['count']} | {r['reason']} | "
                         f"{r.get('decomposition') or ''} | {nodes} |")
        lines += ["", f"**Summary:** {_summary(report)}"]
        lines += [f"- {a}" for a in report.get("advice", [])]
        return "\n".join(lines)
    if fmt != "text":
        raise UsageError(f"unknown --format {fmt!r}; choose {', '.join(FORMATS)}")
    lines = [_title(report)]
    for r in _rows(report):
        extra = f"  [decompose: {r['decomposition']}]" if r.get("decomposition") else ""
        where = f"  at {r['nodes'][0]}" + (f" (+{len(r['nodes']) - 1})" if len(r["nodes"]) > 1
                                           else "") if r["nodes"] else ""
        notes = f" (note: {'; '.join(r['notes'])})" if r.get("notes") else ""
        lines.append(f"{r['status'].upper():<12} {r['op']} x{r['count']}{where}: "
                     f"{r['reason']}{notes}{extra}")
    lines.append(f"summary: {_summary(report)}")
    lines += [f"advice: {a}" for a in report.get("advice", [])]
    return "\n".join(lines)


def render_decompose(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}; choose {', '.join(FORMATS)}")
    bullet = "- " if fmt == "markdown" else ""
    verdict = "PASS" if report["passed"] else "FAIL"
    lines = [f"{verdict} {report['model']} -> {report['output']} (opset "
             f"{report['opset']['from']} -> {report['opset']['to']})"]
    lines += [f"{bullet}rewrote {r['op']} {r['node']} with {r['rule']}" for r in
              report["rewrites"]]
    lines += [f"{bullet}kept {d['op']} {d['node']}: {d['why']}" for d in report["declined"]]
    lines += [f"{bullet}opset not lowered: {b['op']} {b['node']}: {b['why']}"
              for b in report["lowering_blockers"]]
    lines += [f"{bullet}still {r['status']}: {r['op']} x{r['count']}: {r['reason']}"
              for r in report["remaining"]]
    check = report.get("verification")
    if check:
        if check.get("error"):
            lines.append(f"{bullet}verification error: {check['error']}")
        for o in check["outputs"]:
            mark = "ok" if o["max_abs_error"] <= check["atol"] else "FAIL"
            lines.append(f"{bullet}{mark} output {o['name']}: max abs error "
                         f"{o['max_abs_error']:.3g} (atol {check['atol']:g})")
    return "\n".join(lines)
