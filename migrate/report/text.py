"""Plain text report, ruff-like: one block per finding with a code excerpt, then a summary."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.color import ColorSystem
from rich.style import Style

from migrate.core.display import escape, shown_path
from migrate.core.findings import CATEGORIES, Finding, ScanResult
from migrate.core.rules import Rule
from migrate.report import effort, effort_table
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

STYLES = {"auto": "green", "assisted": "yellow", "manual": "red", "perf": "cyan"}
TOP_RULES = 10
TAB = 4


class Painter:
    """Wraps text in ANSI styles (rendered by rich) when colour is on; identity otherwise.
    Building strings directly keeps a 20,000-finding report fast."""

    def __init__(self, color: bool):
        self.system = ColorSystem.STANDARD if color else None
        self._styles: dict[str, Style] = {}

    def __call__(self, text: str, style: str) -> str:
        if self.system is None or not style or not text:
            return text
        if style not in self._styles:
            self._styles[style] = Style.parse(style)
        return self._styles[style].render(text, color_system=self.system)


def render_text(
    result: ScanResult,
    rules: Sequence[Rule],
    *,
    root: pathlib.Path | None = None,
    color: bool = False,
    width: int | None = None,
    effort=None,
) -> str:
    """Findings grouped by file, each with an excerpt, then the summary. Lines are never
    wrapped (``width`` is accepted for symmetry with the other renderers)."""
    paint = Painter(color)
    lookup = rule_map(rules)
    sources = SourceLines(root)
    out: list[str] = []
    for findings in by_path(result.findings).values():
        gutter = len(str(max(f.line for f in findings)))
        for f in findings:
            out += finding_block(f, sources.line(f), gutter, paint, shown_path(f.path, root))
    out += summary_lines(result, lookup, paint, effort, root)
    return "".join(line + "\n" for line in out)


def finding_block(
    f: Finding, line: str | None, gutter: int, paint: Painter, path: str | None = None
) -> list[str]:
    """One finding; ``path`` as shown (migrate.core.display.shown_path), else f.path."""
    label = "npu-aware" if f.npu_aware else f.category
    out = [
        f"{paint(escape(path or f.path), 'bold')}:{f.line}:{f.column}: {paint(f.rule, 'bold red')} "
        f"{paint(f'[{label}]', STYLES.get(f.category, ''))} {escape(f.message)}"
    ]
    bar = paint(" " * gutter + " |", "blue")
    if line is not None:
        pad, width = underline(line, f)
        out.append(bar)
        out.append(paint(f"{f.line:>{gutter}} | ", "blue") + _shown(line).expandtabs(TAB))
        out.append(bar + " " * (pad + 1) + paint("^" * width, "bold red"))
    if f.fix is not None:
        out.append(
            paint(" " * gutter + " = ", "blue") + f"fix ({f.fix.applicability}): {escape(f.fix.description)}"
        )
    return out + [""]


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _shown(line: str) -> str:
    """The source line with control characters shown as U+FFFD (one cell each, so the
    underline stays in place)."""
    return _CONTROL.sub("\ufffd", line)


def underline(line: str, f: Finding) -> tuple[int, int]:
    """Display offset and width (terminal cells) of the finding's span within its line
    (the line may be a window of a long line that starts at ``f.snippet_start``)."""
    shift = f.snippet_start if f.snippet else 0
    start = min(max(f.column - 1 - shift, 0), len(line))
    end = f.end_column - 1 - shift if f.end_line == f.line else len(line)
    end = min(max(end, start), len(line))
    pad = cell_len(line[:start].expandtabs(TAB))
    width = cell_len(line[:end].expandtabs(TAB)) - pad
    return pad, max(width, 1)


def summary_lines(
    result: ScanResult, rules: Mapping[str, Rule], paint: Painter, model=None, root=None
) -> list[str]:
    summary = result.summary()
    files = len({f.path for f in result.findings})
    scanned = plural(summary["files_scanned"], "file") + " scanned"
    if result.errors:
        scanned += ", " + plural(len(result.errors), "error")
    if result.target:
        scanned += f"; target: {result.target}"
    if summary.get("npu_aware"):
        scanned += f"; {summary['npu_aware']} already handle NPU"
    if not result.findings and result.errors:
        out = [paint(f"No findings, but not every file could be scanned ({scanned}).", "bold red")]
    elif not result.findings:
        out = [paint(f"All checks passed! ({scanned})", "bold green")]
    else:
        out = [
            paint(
                f"Found {plural(len(result.findings), 'finding')} in {plural(files, 'file')} ({scanned}).",
                "bold",
            )
        ]
        out += breakdown_lines(result, rules, paint, model)
    helpers = summary.get("device_helpers") or []
    if helpers and any(f.fix is not None for f in result.findings):
        out += ["", paint("Device helpers", "bold") + " (portable rewrites route through them)"]
        out += [f"  {escape(h['package'])}: {escape(h['helpers'])}" for h in helpers]
    if result.findings and rules and not any(r.category == "perf" for r in rules.values()):
        out += [
            "",
            "NPU-affinity advice (fused kernels and optimizers, NPU runtime settings) "
            "is opt-in: add `--extend-select MIG9`.",
        ]
    if result.errors:
        out += ["", paint(f"Errors ({len(result.errors)})", "bold red")]
        out += [
            f"  {escape(shown_path(e.path, root))}: {escape(e.message)}"
            for e in sorted(result.errors, key=lambda e: e.path)
        ]
    return out


def breakdown_lines(result: ScanResult, rules: Mapping[str, Rule], paint: Painter, model=None) -> list[str]:
    summary = result.summary()
    out = ["", paint("By category", "bold")]
    for cat in CATEGORIES:
        n = summary["by_category"].get(cat, 0)
        if cat == "perf" and not n:
            continue
        out.append("  " + paint(f"{cat:<9}", STYLES[cat]) + f"{n:>6}   {ACTIONS[cat] if n else ''}".rstrip())
    if summary.get("npu_aware"):
        out.append(f"  {'npu-aware':<9}{summary['npu_aware']:>6}   already handles NPU: nothing to do")
    by_rule = sorted(summary["by_rule"].items(), key=lambda kv: (-kv[1], kv[0]))
    out += ["", paint("Top rules" if len(by_rule) > TOP_RULES else "By rule", "bold")]
    width = len(str(by_rule[0][1]))
    for code, n in by_rule[:TOP_RULES]:
        name = rules[code].name if code in rules else _name_of(result.findings, code)
        out.append(f"  {n:>{width}}  {code}  {name}")
    if len(by_rule) > TOP_RULES:
        out.append(f"  ... and {plural(len(by_rule) - TOP_RULES, 'more rule')}")
    est = effort.estimate(result.findings, model or rules)
    table = effort_table.text_lines(est)
    return out + ["", fixable_sentence(fix_counts(result.findings)), "", paint(table[0], "bold"), *table[1:]]


def _name_of(findings: Sequence[Finding], code: str) -> str:
    return next((f.name for f in findings if f.rule == code), "")


def render_statistics(
    result: ScanResult, rules: Sequence[Rule], *, color: bool = False, width: int | None = None
) -> str:
    """ruff --statistics: count, code, fix marker and name per rule, most frequent first."""
    paint = Painter(color)
    rows = statistics_rows(result.findings, rules)
    marks = {"safe": "[*]", "unsafe": "[-]", "partial": "[~]", "": "   "}
    count_w = max((len(str(r["count"])) for r in rows), default=1)
    code_w = max((len(r["code"]) for r in rows), default=6)
    out: list[str] = []
    for r in rows:
        code = paint(f"{r['code']:<{code_w}}", "bold red")
        out.append(f"{r['count']:>{count_w}}  {code}  {marks[r['fix']]} {r['name']}")
    legend = {
        "safe": "[*] fixable with `migrate apply`",
        "unsafe": "[-] fixable with `--unsafe-fixes`",
        "partial": "[~] some findings fixable",
    }
    used = {r["fix"] for r in rows}
    shown = [legend[k] for k in ("safe", "unsafe", "partial") if k in used]
    if shown:
        out.append("; ".join(shown))
    if not rows:
        scanned = plural(result.files_scanned, "file")
        out.append(f"No findings ({scanned} scanned).")
    return "".join(line + "\n" for line in out)
