"""Kind ``call-keyword``: calls that switch on a CUDA-only feature by a keyword argument.

``AutoModel.from_pretrained(name, load_in_8bit=True)`` loads through bitsandbytes. Rows
give ``params.calls`` (qualified names, or ``*.method`` for a method of any object) and
``params.keywords`` (names); a call passing one of them with a value other than the
constants False / None is reported at the keyword.
"""

from __future__ import annotations

import ast

from migrate.core.kinds import Token, rule_kind, strings
from migrate.core.rules import Rule
from migrate.scan.python.pyfile import PyFile

PARAMS = {
    "calls": strings(required=True, doc="qualified call names, or *.method"),
    "keywords": strings(required=True, doc="keyword names that switch the feature on"),
}


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(str(k)) for k in rule.params.get("keywords") or ()}


def _off(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, None)


@rule_kind("call-keyword", engine="python", params=PARAMS, tokens=_tokens)
def run(f: PyFile, rules: list[Rule]) -> None:
    table = [
        (rule, set(map(str, rule.params["calls"])), set(map(str, rule.params["keywords"]))) for rule in rules
    ]
    for node in f.nodes(ast.Call):
        qual = f.qualname(node.func)
        method = "*." + node.func.attr if isinstance(node.func, ast.Attribute) else None
        for rule, calls, keywords in table:
            if qual not in calls and method not in calls:
                continue
            for kw in node.keywords:
                if kw.arg in keywords and not _off(kw.value):
                    f.report_node(
                        rule, kw, {"name": qual or method, "keyword": kw.arg, "symbol": kw.arg}, None
                    )
