"""Scan the non-Python files of a PyTorch project: scripts, images, CI, requirements, kernels.

    scan_text_file(text, rel, kind, rules) -> list[Finding]

``kind`` is a text file kind of migrate/core/filekinds.py. Each rule kind's matcher is a
module of migrate/scan/text/kinds/, found by the kind registry (migrate.core.kinds); a new
kind is a new module. A rule runs only where a file holds one of its trigger words (the
tokens its kind derives from the row, compared case-insensitively; a kind that gives none
always runs): most files of a project hold none, and then neither comment masking nor any
regex runs. Matchers see the text with comments blanked out (text_mask), so every offset is
an offset into the exact text: edits keep CRLF line endings and everything else byte for
byte.
"""

from __future__ import annotations

from collections.abc import Sequence

from migrate.core.filekinds import TEXT_KINDS
from migrate.core.findings import Finding, LineIndex
from migrate.core.rules import Rule
from migrate.scan.ruleset import RuleSet
from migrate.scan.suppress import drop_suppressed, masked_comments
from migrate.scan.text.mask import mask_comments
from migrate.scan.text.textfile import TextFile


def scan_text_file(text: str, rel: str, kind: str, rules: RuleSet | Sequence[Rule]) -> list[Finding]:
    """Findings, with fixes where a fix exists, for one decoded non-Python file.

    Only rules whose ``files`` list holds ``kind`` apply; ``# migrate: ignore[CODE]`` on a
    line suppresses findings starting there. Never raises on odd text.
    """
    if kind not in TEXT_KINDS:
        return []
    ruleset = RuleSet.of(rules)
    active = _active(text, ruleset.text(kind).triggers)
    if not active:
        return []
    tf = TextFile(text=text, masked=mask_comments(text, kind), rel=rel, kind=kind, index=LineIndex(text))
    findings: list[Finding] = []
    for spec, group in ruleset.text_groups(active):
        findings += spec.run(tf, group)
    findings = drop_suppressed(ruleset.kept(findings), masked_comments(text, tf.masked, tf.index))
    findings.sort(key=Finding.sort_key)
    return findings


def _active(text: str, triggers) -> list[Rule]:
    """The rules whose trigger words occur in ``text``."""
    lower = None
    out = []
    for rule, words in triggers:
        if words is None:
            out.append(rule)
            continue
        if lower is None:
            lower = text.lower()
        if any(w in lower for w in words):
            out.append(rule)
    return out
