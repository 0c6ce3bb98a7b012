"""Shared by the text-file matchers: one place that turns a matched span into a Finding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.findings import Edit, Finding, Fix, LineIndex
from migrate.rules import Rule
from migrate.source.suppress import is_suppressed


@dataclass
class TextFile:
    """One decoded file as the matchers see it."""

    text: str  # exact text; all offsets point into it
    masked: str  # same length, comments blanked (see text_mask)
    rel: str  # path for findings
    kind: str  # file kind from textfiles.file_kind
    index: LineIndex

    def finding(self, rule: Rule, start: int, end: int, values: dict[str, Any],
                replacement: str | None = None) -> Finding | None:
        """A finding of ``rule`` on text[start:end]; a fix replaces that span by
        ``replacement`` when the rule is not manual. None when suppressed on its line."""
        line, col = self.index.position(start)
        end_line, end_col = self.index.position(max(end, start))
        snippet = self.index.line_text(line)
        if is_suppressed(snippet, rule.code, rule.name):
            return None
        fix = None
        if replacement is not None and rule.category != "manual":
            fix = Fix(
                applicability="safe" if rule.category == "auto" else "unsafe",
                description=rule.format_fix_title(**values),
                edits=[Edit(start, end, replacement)],
            )
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
