"""Scan one Python file's text with the selected rules."""

from __future__ import annotations

import warnings

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.scan.python.kinds import group_by_kind, python_kinds
from migrate.scan.python.prefilter import python_hit_pattern
from migrate.scan.python.pyfile import PyFile
from migrate.scan.suppress import is_suppressed


class ParseError(Exception):
    pass


def parse_python(text: str, rel: str, hit=None) -> PyFile:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on invalid escapes etc.
            return PyFile.parse(text, rel, hit)
    except SyntaxError as exc:
        hint = ""
        if exc.msg and ("print" in exc.msg or "Missing parentheses" in exc.msg):
            hint = " (Python 2 code?)"
        raise ParseError(f"syntax error at line {exc.lineno}: {exc.msg}{hint}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"cannot parse: {type(exc).__name__}: {exc}") from None


def scan_python(text: str, rel: str, rules: list[Rule] | tuple[Rule, ...]) -> list[Finding]:
    f = parse_python(text, rel, python_hit_pattern(tuple(rules)))
    kinds = python_kinds()
    for kind, group in group_by_kind(rules).items():
        fn = kinds.get(kind)
        if fn is not None:
            fn(f, group)
    lines: dict[int, str | None] = {}  # per line: its text if it holds a comment
    kept = []
    for x in f.findings:
        if x.line not in lines:
            text = f.index.line_text(x.line)
            lines[x.line] = text if "#" in text else None
        text = lines[x.line]
        if text is None or not is_suppressed(text, x.rule, x.name):
            kept.append(x)
    return sorted(kept, key=Finding.sort_key)
