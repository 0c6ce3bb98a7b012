from __future__ import annotations

import textwrap

import pytest

from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text


def _findings(code: str, select: tuple[str, ...] | None = None, target: str = "npu"):
    rules = [r for r in default_rules() if not select or r.code.startswith(select)]
    return scan_text(textwrap.dedent(code), "t.py", "python", rules, target)


@pytest.fixture
def found():
    """found(code) -> [(rule, line)] of the findings in a snippet."""

    def run(code: str, select: tuple[str, ...] | None = None):
        return [(f.rule, f.line) for f in _findings(code, select)]

    return run


@pytest.fixture
def fixed():
    """fixed(code) -> the text after applying every fix's edits (no import insertion)."""

    def run(code: str, unsafe: bool = False, target: str = "npu"):
        text = textwrap.dedent(code)
        fs = scan_text(text, "t.py", "python", default_rules(), target)
        edits = sorted(
            {e for f in fs if f.fix and (unsafe or f.fix.applicability == "safe") for e in f.fix.edits},
            reverse=True,
        )
        for e in edits:
            text = text[: e.start] + e.content + text[e.end :]
        return text

    return run


@pytest.fixture
def ported():
    """ported(code, target="portable", unsafe=False) -> the text `migrate apply` writes for a
    snippet (tests/porting.py: edits, imports, the port's helpers), checked to parse."""
    from porting import port

    return port
