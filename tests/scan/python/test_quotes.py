"""The file's quote (migrate/scan/python/quotes.py): counted from the lexer's string tokens,
it agrees with the count over the tree's constants, which it replaces."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from migrate.core.findings import LineIndex
from migrate.scan.python.quotes import dominant_quote, lexed_quote


def _by_tree(text: str) -> str:
    index = LineIndex(text)
    constants = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)]
    return dominant_quote(text, constants, index.span)


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("a = 'x'\nb = 'y'\nc = \"z\"\n", "'"),
        ("a = 'x'\nb = \"y\"\n", '"'),  # a tie: double
        ("x = ('a' 'b')\ny = \"c\"\n", '"'),  # a concatenation is one literal holding quotes
        ("'a'\n'b'\nx = \"c\"\n", "'"),  # two statements, not a concatenation
        ("x = f\"{d['k']} {e['j']}\"\ny = \"z\"\n", "'"),  # strings inside f-string fields
        ("x = \"it's\"\ny = 'a'\n", "'"),  # a literal holding the other quote says nothing
        ('"""Doc."""\nx = \'a\'\n', "'"),  # docstrings say nothing
        ("x = b'a' + rb'b'\ny = u\"c\"\n", "'"),
    ],
)
def test_lexed_quote_counts_what_the_tree_counts(source, quote):
    assert lexed_quote(source.encode()) == quote
    assert _by_tree(source) == quote


def test_unsure_lexer_leaves_it_to_the_tree():
    assert lexed_quote(b'if"x"in y: pass\n') is None


def test_agrees_with_the_tree_on_real_sources():
    specs = [importlib.util.find_spec(name) for name in ("transformers", "torch")]
    roots = [Path(s.origin).parent for s in specs if s is not None and s.origin]
    if not roots:
        pytest.skip("neither transformers nor torch is installed")
    checked = 0
    for root in roots:
        for path in sorted(root.rglob("*.py"))[::7][:150]:
            text = path.read_text("utf-8", "replace")
            try:
                expected = _by_tree(text)
            except (SyntaxError, ValueError):
                continue
            got = lexed_quote(text.encode("utf-8", "surrogatepass"))
            if got is not None:
                assert got == expected, path
                checked += 1
    assert checked > 100
