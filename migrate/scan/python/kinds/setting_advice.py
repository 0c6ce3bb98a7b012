"""Kind ``setting-advice``: one note per file where a script configures its backend.

Rows give ``params.targets`` (qualified names that a script assigns when it sets up the
accelerator, such as ``torch.backends.cudnn.benchmark``); the first assignment to one of
them in a file carries the rule's advice (NPU runtime settings engineers add next to it).
"""

from __future__ import annotations

import ast

from migrate.core.kinds import Token, rule_kind, strings
from migrate.core.rules import Rule
from migrate.scan.python.pyfile import PyFile

PARAMS = {"targets": strings(required=True, doc="qualified names whose assignment triggers")}


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(str(t).rsplit(".", 1)[-1]) for t in rule.params.get("targets") or ()}


@rule_kind("setting-advice", engine="python", params=PARAMS, tokens=_tokens)
def run(f: PyFile, rules: list[Rule]) -> None:
    assigns = sorted(f.nodes(ast.Assign), key=lambda n: (n.lineno, n.col_offset))
    for rule in rules:
        targets = set(map(str, rule.params["targets"]))
        for node in assigns:
            names = [f.qualname(t) for t in node.targets]
            hit = next((n for n in names if n in targets), None)
            if hit:
                f.report_node(rule, node, {"name": hit}, None)
                break
