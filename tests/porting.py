"""Port one file's text in memory, as ``migrate apply`` does, and check it still parses."""

from __future__ import annotations

import ast
import textwrap
from functools import partial

from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan

RULES = list(default_rules())


def port(code: str, target: str = "portable", unsafe: bool = False, rel: str = "t.py") -> str:
    """``code`` (dedented) after the port to ``target``, as the file ``rel``."""
    scan = partial(engine_scan, target=target)
    text, _, _, error = fix_text(textwrap.dedent(code), rel, "python", RULES, scan, unsafe=unsafe)
    assert error is None, error
    ast.parse(text)
    return text
