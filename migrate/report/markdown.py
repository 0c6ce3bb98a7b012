"""Markdown report for a pull-request comment: a summary table, then per-file details in
collapsible ``<details>`` blocks. Stays under GitHub's 65,536-character comment limit by
leaving out the file sections that do not fit (and saying so)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from migrate.core.display import md_cell
from migrate.core.findings import CATEGORIES, Finding, ScanResult
from migrate.core.rules import Rule
from migrate.report import effort, effort_table
from migrate.report.common import (
    ACTIONS,
    by_path,
    fix_counts,
    fixable_sentence,
    plural,
    rule_map,
)

LIMIT = 60_000  # GitHub caps comments at 65,536 characters; keep room for a footer.
FIX_MARK = {"safe": "safe fix", "unsafe": "unsafe fix"}


cell = md_cell


def _summary(result: ScanResult, rules: Mapping[str, Rule], model=None) -> list[str]:
    s = result.summary()
    files = len({f.path for f in result.findings})
    title = (
        f"{plural(len(result.findings), 'finding')} in {plural(files, 'file')}"
        if result.findings
        else "no findings"
    )
    out = [f"## ascend-migrate: {title}", ""]
    if result.target:
        aware = f"; {s['npu_aware']} already handle NPU (no work)" if s.get("npu_aware") else ""
        out += [f"Port target: `{result.target}`{aware}.", ""]
    out += ["| Category | Findings | What to do |", "|---|---:|---|"]
    for cat in CATEGORIES:
        out.append(f"| {cat} | {s['by_category'].get(cat, 0)} | {ACTIONS[cat]} |")
    if s.get("npu_aware"):
        out.append(f"| npu-aware | {s['npu_aware']} | already handles NPU: nothing to do |")
    out.append(f"| **total** | **{len(result.findings)}** | |")
    est = effort.estimate(result.findings, model or rules)
    out += [
        "",
        f"Files scanned: {s['files_scanned']} · errors: {len(result.errors)} · "
        f"estimated effort: ~{est.describe()}",
        "",
        fixable_sentence(fix_counts(result.findings)),
        "",
    ]
    if result.findings:
        out += effort_table.markdown_lines(est)
    return out


def _rules_table(result: ScanResult, rules: Mapping[str, Rule]) -> list[str]:
    by_rule = sorted(result.summary()["by_rule"].items(), key=lambda kv: (-kv[1], kv[0]))
    if not by_rule:
        return []
    out = [
        f"<details><summary>By rule ({len(by_rule)})</summary>",
        "",
        "| Rule | Name | Category | Findings |",
        "|---|---|---|---:|",
    ]
    for code, n in by_rule:
        sample = next(f for f in result.findings if f.rule == code)
        name = rules[code].name if code in rules else sample.name
        out.append(f"| `{code}` | {name} | {sample.category} | {n} |")
    return out + ["", "</details>", ""]


def _file_section(path: str, findings: Sequence[Finding]) -> str:
    out = [
        f"<details><summary><code>{cell(path)}</code>: {plural(len(findings), 'finding')}</summary>",
        "",
        "| Line | Rule | Category | Message | Fix |",
        "|---:|---|---|---|---|",
    ]
    for f in findings:
        fix = FIX_MARK.get(f.fix.applicability, "") if f.fix else ""
        out.append(
            f"| {f.line}:{f.column} | `{f.rule}` {f.name} | {f.category} | {cell(f.message)} | {fix} |"
        )
    return "\n".join(out + ["", "</details>", ""])


def _errors(result: ScanResult) -> list[str]:
    if not result.errors:
        return []
    out = [f"<details><summary>Files not scanned ({len(result.errors)})</summary>", ""]
    out += [
        f"- <code>{cell(e.path)}</code>: {cell(e.message)}"
        for e in sorted(result.errors, key=lambda e: e.path)
    ]
    return out + ["", "</details>", ""]


def render_markdown(result: ScanResult, rules: Sequence[Rule], model=None) -> str:
    lookup = rule_map(rules)
    head = "\n".join(_summary(result, lookup, model) + _rules_table(result, lookup) + _errors(result))
    parts = [head]
    size = len(head)
    groups = list(by_path(result.findings).items())
    if groups:
        parts.append("### Files\n")
    for i, (path, findings) in enumerate(groups):
        section = _file_section(path, findings)
        if size + len(section) > LIMIT:
            parts.append(
                f"_{plural(len(groups) - i, 'more file')} not shown; "
                "run `migrate scan` locally for the full list._\n"
            )
            break
        parts.append(section)
        size += len(section)
    return "\n".join(parts)
