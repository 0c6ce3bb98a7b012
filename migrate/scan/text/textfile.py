"""Shared by the text-file matchers: one place that turns a matched span into a Finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate.core.findings import Edit, Finding, Fix, LineIndex
from migrate.core.rules import Rule
from migrate.scan.suppress import suppressed_codes


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
            )
        snippet, snippet_start = self.index.snippet(line, col)
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
            snippet=snippet,
            snippet_start=snippet_start,
        )


def applies(rule: Rule, kind: str) -> bool:
    return kind in rule.files
