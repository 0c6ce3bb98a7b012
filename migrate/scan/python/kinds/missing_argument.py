"""Kind ``missing-argument``: calls whose default silently means CUDA.

``torch.amp.GradScaler()`` defaults to ``device="cuda"``. Rows give
``params.calls: {qualified.name: {keyword: device, position: 0, value: '"npu"'}}``; a call
that passes neither the positional nor the keyword argument is reported, and the fix
inserts the value as the first argument.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, fix_for
from migrate.core.kinds import Token, param, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import mapping, record
from migrate.core.targets import template
from migrate.scan.python.portable import declines, portable_fix, spell
from migrate.scan.python.pyfile import PyFile

PARAMS = {
    "calls": mapping(
        record(
            value=param(str, required=True, doc="the argument to add"),
            position=param(int, doc="positional index it takes"),
            keyword=param(str, doc="keyword it may be passed as"),
        ),
        required=True,
        doc="qualified call -> the argument to add",
    )
}
PORTABLE = {"value": param(str, check=template, doc="the argument for --target portable")}


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(k.rsplit(".", 1)[-1]) for k in rule.params.get("calls") or {}}


@rule_kind("missing-argument", engine="python", params=PARAMS, tokens=_tokens, portable=PORTABLE)
def run(f: PyFile, rules: list[Rule]) -> None:
    table = {q: (rule, spec) for rule in rules for q, spec in (rule.params.get("calls") or {}).items()}
    for node in f.nodes(ast.Call):
        qual = f.qualname(node.func)
        if qual not in table:
            continue
        rule, spec = table[qual]
        if len(node.args) > spec.get("position", 0) or any(
            kw.arg in (spec.get("keyword"), None) for kw in node.keywords
        ):
            continue
        _, func_end = f.span(node.func)
        paren = f.text.find("(", func_end)
        values = {"name": qual, "value": spec["value"], "keyword": spec.get("keyword", "")}
        fix = None
        if paren != -1 and not f.text[func_end:paren].strip():
            sep = ", " if node.args or node.keywords else ""
            if f.target == "portable":
                fix = _portable(f, rule, node, paren, sep)
            else:
                fix = fix_for(rule, [Edit(paren + 1, paren + 1, spec["value"] + sep)], values)
        f.report_node(rule, node, values, fix)


@declines
def _portable(f: PyFile, rule: Rule, node: ast.Call, paren: int, sep: str):
    if not rule.portable.get("value"):
        return None
    value, imports = spell(f, rule.portable["value"], None, node, bare=True)
    return portable_fix(
        rule, [Edit(paren + 1, paren + 1, value + sep)], imports, f"pass `{value}` as the device"
    )
