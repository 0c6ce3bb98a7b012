"""Shared by the text-file matchers: one place that turns a matched span into a Finding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.core.findings import Edit, Finding, Fix, LineIndex, finding_at, fix_for
from migrate.core.rules import Rule


@dataclass
class TextFile:
    """One decoded file as the matchers see it."""

    text: str  # exact text; all offsets point into it
    masked: str  # same length, comments blanked (see text_mask)
    rel: str  # path for findings
    kind: str  # file kind from textfiles.file_kind
    index: LineIndex

    def finding(
        self,
        rule: Rule,
        start: int,
        end: int,
        values: dict[str, Any],
        replacement: str | None = None,
        *,
        fix: Fix | None = None,
        described: dict[str, Any] | None = None,
    ) -> Finding | None:
        """A finding of ``rule`` on text[start:end]; a fix replaces that span by
        ``replacement`` when the rule is not manual (or is ``fix``, made by fix_for).
        ``described``: the values its fix title names, where they differ from the message's."""
        if replacement is not None and rule.category != "manual":
            fix = fix_for(rule, [Edit(start, end, replacement)], described or values)
        symbol = str(values.get("package") or values.get("name") or values.get("match") or "")
        return finding_at(rule, self.index, self.rel, start, end, values, fix, symbol=symbol)
