"""Shared by the text-file matchers: one place that turns a matched span into a Finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate.core.findings import Edit, Finding, Fix, LineIndex
from migrate.core.rules import Rule
from migrate.scan.suppress import suppressed_codes

SNIPPET_MAX = 400  # longer lines are cut to a window around the finding


@dataclass
class TextFile:
    """One decoded file as the matchers see it."""

    text: str  # exact text; all offsets point into it
    masked: str  # same length, comments blanked (see text_mask)
    rel: str  # path for findings
    kind: str  # file kind from textfiles.file_kind
    index: LineIndex
    _suppressions: dict[int, set[str] | None] = field(default_factory=dict)

    def suppressed(self, line: int, rule: Rule) -> bool:
        if line not in self._suppressions:
            text = self.index.line_text(line)
            self._suppressions[line] = suppressed_codes(text) if "#" in text else None
        codes = self._suppressions[line]
        return codes is not None and (not codes or rule.code in codes or rule.name in codes)

    def snippet(self, line: int, col: int) -> str:
        start = self.index.starts[line - 1]
        end = self.text.find("\n", start)
        end = len(self.text) if end < 0 else end
        if end - start > SNIPPET_MAX:
            start = max(start, start + col - 1 - SNIPPET_MAX // 4)
            end = min(end, start + SNIPPET_MAX)
        return self.text[start:end].rstrip("\r")

    def finding(self, rule: Rule, start: int, end: int, values: dict[str, Any],
                replacement: str | None = None) -> Finding | None:
        """A finding of ``rule`` on text[start:end]; a fix replaces that span by
        ``replacement`` when the rule is not manual. None when suppressed on its line."""
        line, col = self.index.position(start)
        end_line, end_col = self.index.position(max(end, start))
        if self.suppressed(line, rule):
            return None
        fix = None
        if replacement is not None and rule.category != "manual":
            fix = Fix(
                applicability="safe" if rule.category == "auto" else "unsafe",
                description=rule.format_fix_title(**values),
                edits=[Edit(start, end, replacement)],
            ).locate(self.index)
        return Finding(
            rule=rule.code,
            name=rule.name,
            path=self.rel,
            line=line,
            column=col,
            end_line=end_line,
            end_column=end_col,
            message=rule.format_message(**values),
            category=rule.category,
            fix=fix,
            snippet=self.snippet(line, col),
            impact=rule.impact,
            symbol=str(values.get("package") or values.get("name") or values.get("match") or ""),
        )


def applies(rule: Rule, kind: str) -> bool:
    return kind in rule.files


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (any order) to text; overlapping later edits are skipped."""
    out = []
    pos = 0
    for edit in sorted(edits):
        if edit.start < pos:
            continue
        out.append(text[pos:edit.start])
        out.append(edit.content)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)
