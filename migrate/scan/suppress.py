"""Suppression comments: ``# migrate: ignore[MIG101,MIG201]`` or bare ``# migrate: ignore``.

The comment sits on the line a finding starts on (any file kind that uses ``#`` comments),
and it must be a real comment: the text ``# migrate: ignore`` inside a string, an f-string,
bytes, a triple-quoted string, a shell ``echo "..."``, a quoted YAML scalar or a Dockerfile
``RUN echo`` is data and silences nothing. Python comments come from the tokenizer, other
kinds' from their comment masks (scan/text/mask.py). ``ignore[]`` with no code silences
nothing. :func:`drop_suppressed` is the one check: both engines run it on their findings.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable

from migrate.core.findings import Finding, LineIndex

_IGNORE = re.compile(r"#\s*migrate:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]*)\])?")
_MARK = "migrate"  # no suppression can exist in a text without it

Comments = Callable[[int], str | None]  # line -> the comment on it (from its "#"), or None


def suppressed_codes(comment: str | None) -> set[str] | None:
    """None if the comment holds no suppression; an empty set means 'all rules'."""
    if not comment or "#" not in comment:
        return None
    m = _IGNORE.search(comment)
    if not m:
        return None
    codes = m.group("codes")
    if codes is None:
        return set()
    named = {c.strip() for c in codes.split(",") if c.strip()}
    return named or None  # ignore[] names no rule: it silences nothing


def python_comments(text: str) -> Comments:
    """The comments of a Python text, by line, from the tokenizer."""
    if _MARK not in text:
        return lambda line: None
    found: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.COMMENT and _MARK in tok.string:
                found[tok.start[0]] = tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the parser accepted it; keep what was tokenized
    return found.get


def masked_comments(text: str, masked: str, index: LineIndex) -> Comments:
    """The comments of a text file: what its comment mask blanked out, by line."""
    if _MARK not in text:
        return lambda line: None

    def comment(line: int) -> str | None:
        start, end = index.starts[line - 1], index.line_end(line)
        for i in range(start, end):
            if masked[i] != text[i]:
                return text[i:end]
        return None

    return comment


def drop_suppressed(findings: list[Finding], comments: Comments) -> list[Finding]:
    """The findings not silenced by a real comment on the line they start on."""
    by_line: dict[int, set[str] | None] = {}
    kept = []
    for f in findings:
        if f.line not in by_line:
            by_line[f.line] = suppressed_codes(comments(f.line))
        codes = by_line[f.line]
        if codes is None or (codes and f.rule not in codes and f.name not in codes):
            kept.append(f)
    return kept
