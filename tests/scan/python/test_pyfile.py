"""PyFile's indexes: ``around`` gives the nodes that can hold a point on given lines, from
the prefilter-pruned index when it may, in the order the full walk would list nested ones."""

from __future__ import annotations

import ast

from migrate.core.rules import default_rules, select_rules
from migrate.scan.python.pyfile import PyFile
from migrate.scan.ruleset import RuleSet

CODE = """\
import torch


def f(x, flag):
    if flag:
        y = {"a": (x.cuda() if flag else x)}
        return y
    return x


def g(x):
    if x:
        return x + 1
    return x
"""


def _parsed() -> PyFile:
    plan = RuleSet(select_rules(default_rules(), None, None, None)).python("m.py")
    return PyFile.parse(CODE, "m.py", plan.hits)


def test_around_hit_lines_uses_the_pruned_index_outermost_first():
    f = _parsed()
    assert f.lines is not None and 6 in f.lines and 13 not in f.lines
    types = (ast.If, ast.IfExp, ast.Dict, ast.FunctionDef)
    found = f.around({6}, *types)
    assert [type(n).__name__ for n in found] == ["FunctionDef", "If", "Dict", "IfExp"]
    assert all(n.lineno <= 6 <= n.end_lineno for n in found)  # g and its if are not there


def test_around_other_lines_walks_the_whole_file():
    f = _parsed()
    types = (ast.If, ast.FunctionDef)
    assert f.around({13}, *types) == f.walk(*types)
    assert len(f.walk(*types)) == 4
