"""Kind ``dependency`` in Python: CUDA-only packages in setup.py requirement lists.

``setup(install_requires=["flash-attn>=2"])``, ``extras_require={"gpu": ["cupy-cuda12x"]}``
and lists assigned to names such as ``REQUIRED`` or ``install_requires``. Package tables,
name normalization and suggestions are those of requirement files (text_deps.py). Findings
carry no fix: which replacement fits depends on the project.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from migrate.core.kinds import Token, rule_kind
from migrate.core.rules import Rule
from migrate.scan.python.pyfile import PyFile
from migrate.scan.tables.dependencies import KIND, PARAMS, suggestion_for
from migrate.scan.tables.requirements import parse_requirement

KEYWORDS = {
    "install_requires",
    "setup_requires",
    "tests_require",
    "extras_require",
    "requires",
    "dependencies",
}
# Every place above spells one of these (literal, confirming regex); see prefilter.py.
_LIST = r"\s*(?::[^=\n]*)?=\s*[\[\({]"
TOKENS = (
    ("require", r"(?:install_requires|setup_requires|tests_require|extras_require)\s*="),
    ("require", r"\w*require\w*" + _LIST),
    ("REQUIRE", r"\w*REQUIRE\w*" + _LIST),
    ("Require", r"\w*Require\w*" + _LIST),
    ("dependencies", r"dependencies" + _LIST),
    ("DEPENDENCIES", r"DEPENDENCIES" + _LIST),
)
_NAME = re.compile(r"(?i)requir|dependencies")


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(literal, pattern) for literal, pattern in TOKENS}


@rule_kind(
    KIND, engine="python", params=PARAMS, tokens=_tokens, paths=("setup.py", "setup_*.py", "setup-*.py")
)
def run(f: PyFile, rules: list[Rule]) -> None:
    for container in _containers(f):
        for node in _strings(container):
            text = str(node.value)
            req = parse_requirement(text, 0, len(text))
            if req is None:
                continue
            for rule in rules:
                values = _values(rule, req, text)
                if values is not None:
                    f.report_node(rule, node, values, None)


def _values(rule: Rule, req, text: str) -> dict | None:
    suggestion = suggestion_for(rule, req.name)
    if suggestion is None:
        return None
    values = {"package": req.raw_name, "suggestion": suggestion, "version": ""}
    pattern = rule.params.get("version_pattern")
    if pattern:
        m = re.compile(str(pattern)).search(text, req.spec_start, req.spec_end)
        if m is None:
            return None
        values["version"] = m.group()
    return values


def _containers(f: PyFile) -> Iterator[ast.AST]:
    for node in f.nodes(ast.Call):
        for kw in node.keywords:
            if kw.arg in KEYWORDS:
                yield kw.value
    for node in f.nodes(ast.Assign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None and any(isinstance(t, ast.Name) and _NAME.search(t.id) for t in targets):
            yield node.value


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for elt in node.elts:
            yield from _strings(elt)
    elif isinstance(node, ast.Dict):
        for value in node.values:
            yield from _strings(value)
    elif isinstance(node, ast.BinOp):  # base + extras
        yield from _strings(node.left)
        yield from _strings(node.right)
