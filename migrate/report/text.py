"""Plain text report, ruff-like: one block per finding with a code excerpt, then a summary."""

from __future__ import annotations

import io
import pathlib
import shutil
from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from migrate.findings import CATEGORIES, Finding, ScanResult
from migrate.report import effort
from migrate.report.common import (
    ACTIONS,
    SourceLines,
    by_path,
    fix_counts,
    fixable_sentence,
    plural,
    rule_map,
    statistics_rows,
)
from migrate.rules import Rule

STYLES = {"auto": "green", "assisted": "yellow", "manual": "red"}
TOP_RULES = 10
TAB = 4


def make_console(color: bool, width: int | None) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width or shutil.get_terminal_size((100, 24)).columns,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    return console, buf


def render_text(result: ScanResult, rules: Sequence[Rule], *, root: pathlib.Path | None = None,
                color: bool = False, width: int | None = None) -> str:
    console, buf = make_console(color, width)
    lookup = rule_map(rules)
    sources = SourceLines(root)
    for findings in by_path(result.findings).values():
        gutter = len(str(max(f.line for f in findings)))
        for f in findings:
            _print_finding(console, f, sources.line(f), gutter)
    _print_summary(console, result, lookup)
    return buf.getvalue()


def _print_finding(console: Console, f: Finding, line: str | None, gutter: int) -> None:
    head = Text()
    head.append(f.path, style="bold")
    head.append(f":{f.line}:{f.column}: ")
    head.append(f.rule, style="bold red")
    head.append(" ")
    head.append(f"[{f.category}]", style=STYLES.get(f.category, ""))
    head.append(f" {f.message}")
    console.print(head, soft_wrap=True)
    bar = " " * gutter + " |"
    if line is not None:
        pad, width = underline(line, f)
        console.print(Text(bar, style="blue"), soft_wrap=True)
        excerpt = Text(f"{f.line:>{gutter}} | ", style="blue")
        excerpt.append(line.expandtabs(TAB))
        console.print(excerpt, soft_wrap=True)
        marks = Text(bar + " " + " " * pad, style="blue")
        marks.append("^" * width, style="bold red")
        console.print(marks, soft_wrap=True)
    if f.fix is not None:
        tail = Text(" " * gutter + " = ", style="blue")
        tail.append(f"fix ({f.fix.applicability}): {f.fix.description}")
        console.print(tail, soft_wrap=True)
    console.print()


def underline(line: str, f: Finding) -> tuple[int, int]:
    """Display offset and width (terminal cells) of the finding's span within its line."""
    start = min(max(f.column - 1, 0), len(line))
    end = f.end_column - 1 if f.end_line == f.line else len(line)
    end = min(max(end, start), len(line))
    pad = cell_len(line[:start].expandtabs(TAB))
    width = cell_len(line[:end].expandtabs(TAB)) - pad
    return pad, max(width, 1)


def _print_summary(console: Console, result: ScanResult, rules: Mapping[str, Rule]) -> None:
    summary = result.summary()
    files = len({f.path for f in result.findings})
    scanned = plural(summary["files_scanned"], "file") + " scanned"
    if result.errors:
        scanned += ", " + plural(len(result.errors), "error")
    if not result.findings:
        console.print(Text(f"All checks passed! ({scanned})", style="bold green"), soft_wrap=True)
    else:
        console.print(Text(f"Found {plural(len(result.findings), 'finding')} in "
                           f"{plural(files, 'file')} ({scanned}).", style="bold"), soft_wrap=True)
        _print_breakdown(console, result, rules)
    if result.errors:
        console.print()
        console.print(Text(f"Errors ({len(result.errors)})", style="bold red"))
        for err in sorted(result.errors, key=lambda e: e.path):
            console.print(Text(f"  {err.path}: {err.message}"), soft_wrap=True)


def _print_breakdown(console: Console, result: ScanResult, rules: Mapping[str, Rule]) -> None:
    summary = result.summary()
    console.print()
    console.print(Text("By category", style="bold"))
    for cat in CATEGORIES:
        n = summary["by_category"].get(cat, 0)
        line = Text("  ")
        line.append(f"{cat:<9}", style=STYLES[cat])
        line.append(f"{n:>6}   {ACTIONS[cat] if n else ''}".rstrip())
        console.print(line, soft_wrap=True)
    console.print()
    by_rule = sorted(summary["by_rule"].items(), key=lambda kv: (-kv[1], kv[0]))
    title = "Top rules" if len(by_rule) > TOP_RULES else "By rule"
    console.print(Text(title, style="bold"))
    width = len(str(by_rule[0][1]))
    for code, n in by_rule[:TOP_RULES]:
        name = rules[code].name if code in rules else _name_of(result.findings, code)
        console.print(Text(f"  {n:>{width}}  {code}  {name}"), soft_wrap=True)
    if len(by_rule) > TOP_RULES:
        console.print(Text(f"  ... and {plural(len(by_rule) - TOP_RULES, 'more rule')}"))
    console.print()
    console.print(Text(fixable_sentence(fix_counts(result.findings))), soft_wrap=True)
    est = effort.estimate(result.findings, rules)
    parts = [f"{cat} {effort.format_minutes(est.by_category[cat])}"
             for cat in CATEGORIES if summary["by_category"].get(cat)]
    console.print(Text(f"Estimated effort: ~{est.describe()} ({', '.join(parts)}), "
                       "a rough planning figure."), soft_wrap=True)


def _name_of(findings: Sequence[Finding], code: str) -> str:
    return next((f.name for f in findings if f.rule == code), "")


def render_statistics(result: ScanResult, rules: Sequence[Rule], *, color: bool = False,
                      width: int | None = None) -> str:
    """ruff --statistics: count, code, fix marker and name per rule, most frequent first."""
    console, buf = make_console(color, width)
    rows = statistics_rows(result.findings, rules)
    marks = {"safe": "[*]", "unsafe": "[-]", "partial": "[~]", "": "   "}
    count_w = max((len(str(r["count"])) for r in rows), default=1)
    code_w = max((len(r["code"]) for r in rows), default=6)
    for row in rows:
        line = Text(f"{row['count']:>{count_w}}  ")
        line.append(f"{row['code']:<{code_w}}", style="bold red")
        line.append(f"  {marks[row['fix']]} {row['name']}")
        console.print(line, soft_wrap=True)
    legend = {"safe": "[*] fixable with `migrate apply`",
              "unsafe": "[-] fixable with `--unsafe-fixes`",
              "partial": "[~] some findings fixable"}
    used = {r["fix"] for r in rows}
    shown = [legend[k] for k in ("safe", "unsafe", "partial") if k in used]
    if shown:
        console.print(Text("; ".join(shown)), soft_wrap=True)
    return buf.getvalue()
