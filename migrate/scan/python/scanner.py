"""Scan one Python file's text with the selected rules."""

from __future__ import annotations

import warnings

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.kinds import kinds_of
from migrate.scan.python.prefilter import python_hit_pattern
from migrate.scan.python.pyfile import PyFile
from migrate.scan.suppress import drop_suppressed


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
    for spec in kinds_of("python"):
        group = [r for r in rules if r.kind == spec.name and "python" in r.files]
        if group:
            spec.run(f, group)
    return sorted(drop_suppressed(f.findings, f.index), key=Finding.sort_key)
