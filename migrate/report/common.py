"""Helpers shared by the renderers: ordering, rule lookup, fix counts, source lines, levels."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from migrate.core.fileio import SourceError, read_bytes
from migrate.core.findings import Finding
from migrate.core.rules import Rule

# How loud a finding is, wherever a format has levels (SARIF, GitHub annotations): it
# follows the impact on an NPU, not the category (how it gets fixed).
# crash -> error: the code fails on an NPU (a CUDA-only call, a "cuda" device).
# behaviour -> warning: it runs, but differently (a flag ignored, work on the CPU).
# noop -> note: harmless on an NPU (cudnn.benchmark). perf -> note: optional advice.
LEVELS = {"crash": "error", "behaviour": "warning", "noop": "note", "perf": "note"}
_CATEGORY_LEVELS = {"manual": "error", "assisted": "warning", "auto": "warning", "perf": "note"}

# What a reader does about each category; used in summaries.
ACTIONS = {
    "auto": "`migrate apply`",
    "assisted": "`migrate apply --unsafe-fixes`, then review",
    "manual": "port by hand",
    "perf": "optional: NPU-affinity advice",
}


def level(impact: str, category: str = "") -> str:
    """SARIF level of an impact (for findings made before impacts existed: the category)."""
    return LEVELS.get(impact) or _CATEGORY_LEVELS.get(category, "warning")


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def rule_map(rules: Sequence[Rule]) -> dict[str, Rule]:
    return {r.code: r for r in rules}


def by_path(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Findings grouped by file, files in path order, findings in line order."""
    groups: dict[str, list[Finding]] = {}
    for f in sorted_findings(findings):
        groups.setdefault(f.path, []).append(f)
    return groups


@dataclass
class FixCounts:
    safe: int = 0  # fixed by `migrate apply`
    unsafe: int = 0  # fixed only with --unsafe-fixes
    none: int = 0


def fix_counts(findings: Iterable[Finding]) -> FixCounts:
    counts = FixCounts()
    for f in findings:
        if f.fix is None:
            counts.none += 1
        elif f.fix.applicability == "safe":
            counts.safe += 1
        else:
            counts.unsafe += 1
    return counts


def fixable_sentence(counts: FixCounts) -> str:
    """ruff-style: '3 fixable with `migrate apply`, 2 more with `--unsafe-fixes`.'"""
    if not counts.safe and not counts.unsafe:
        return "No automatic fixes available."
    parts = [f"{counts.safe} fixable with `migrate apply`"]
    if counts.unsafe:
        parts.append(f"{counts.unsafe} more with `--unsafe-fixes`")
    return ", ".join(parts) + "."


def rule_fix_kind(findings: Sequence[Finding]) -> str:
    """'safe' if every finding of a rule has a safe fix, 'unsafe' if all have some fix,
    'partial' if only some do, '' if none do."""
    fixes = [f.fix for f in findings]
    if not any(fixes):
        return ""
    if not all(fixes):
        return "partial"
    return "safe" if all(x is not None and x.applicability == "safe" for x in fixes) else "unsafe"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


@dataclass
class SourceLines:
    """First source line of a finding: its snippet, else read from root/path (cached)."""

    root: pathlib.Path | None
    _files: dict[str, list[str] | None] = field(default_factory=dict)

    def line(self, finding: Finding) -> str | None:
        if finding.snippet:
            return re.split(r"\r\n?|\n", finding.snippet, maxsplit=1)[0]
        lines = self._read(finding.path)
        if lines is None or not 1 <= finding.line <= len(lines):
            return None
        return lines[finding.line - 1]

    def _read(self, path: str) -> list[str] | None:
        if path not in self._files:
            self._files[path] = None
            if self.root is not None:
                try:
                    data, _ = read_bytes(self.root / path)
                    text = data.decode("utf-8", errors="replace")
                    self._files[path] = re.split(r"\r\n?|\n", text)
                except SourceError:
                    pass
        return self._files[path]


def statistics_rows(findings: Sequence[Finding], rules: Sequence[Rule]) -> list[dict]:
    """One row per rule, most frequent first: code, name, count, fix ('safe', 'unsafe',
    'partial' or '' as rule_fix_kind)."""
    names = {r.code: r.name for r in rules}
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    rows = [
        {
            "code": code,
            "name": names.get(code, group[0].name),
            "count": len(group),
            "fix": rule_fix_kind(group),
        }
        for code, group in groups.items()
    ]
    return sorted(rows, key=lambda r: (-r["count"], r["code"]))
