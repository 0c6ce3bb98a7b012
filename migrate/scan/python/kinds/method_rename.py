"""Kind ``method-rename``: methods and properties on tensors and modules (.cuda(), .is_cuda).

``params.attrs: {cuda: {to: npu, call: true}}``. Chains that resolve to an imported module
(``torch.cuda``) belong to ``qualified-name`` rules and are skipped here.
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit
from migrate.core.rules import Rule
from migrate.scan.python.bindings import chain_parts
from migrate.core.kinds import Token, param, rule_kind
from migrate.core.findings import fix_for
from migrate.scan.python.pyfile import PyFile


PARAMS = {"attrs": param(dict, required=True, doc="method or property -> replacement")}


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(a, rf"\.\s*{re.escape(a)}(?!\w)") for a in rule.params.get("attrs") or {}}


@rule_kind("method-rename", engine="python", params=PARAMS, tokens=_tokens)
def run(f: PyFile, rules: list[Rule]) -> None:
    table = {attr: (rule, spec) for rule in rules
             for attr, spec in (rule.params.get("attrs") or {}).items()}
    for node in f.nodes(ast.Attribute):
        if node.attr not in table:
            continue
        rule, spec = table[node.attr]
        parent = f.parent(node)
        is_call = isinstance(parent, ast.Call) and parent.func is node
        if spec.get("call", False) and not is_call:
            continue
        if isinstance(node.ctx, ast.Store) or _is_module_chain(f, node):
            continue
        start, end = f.span(node)
        name_start = end - len(node.attr)
        fix = None
        if f.text[name_start:end] == node.attr and spec.get("to"):
            fix = fix_for(rule, [Edit(name_start, end, spec["to"])],
                           {"attr": node.attr, "to": spec["to"]})
        f.report(rule, name_start, end, {"attr": node.attr, "to": spec.get("to", "")}, fix)


# Receivers on which `.cuda` names a module, not a method (torch.cuda, torch.backends.cuda).
_MODULES = {"torch", "torch.backends"}


def _is_module_chain(f: PyFile, node: ast.Attribute) -> bool:
    parts = chain_parts(node.value)
    if not parts:
        return False
    binding = f.bindings.names.get(parts[0])
    return binding is not None and ".".join([binding.qualname, *parts[1:]]) in _MODULES
