"""Kind ``method-rename``: methods and properties on tensors and modules (.cuda(), .is_cuda).

``params.attrs: {cuda: {to: npu, call: true}}``. Chains that resolve to an imported module
(``torch.cuda``) belong to ``qualified-name`` rules and are skipped here.
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit, fix_for
from migrate.core.kinds import Token, param, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import mapping, record
from migrate.core.targets import template
from migrate.scan.python.bindings import chain_parts
from migrate.scan.python.portable import bare_ok, declines, portable_fix, quote_for, spell
from migrate.scan.python.pyfile import PyFile

PARAMS = {
    "attrs": mapping(
        record(to=param(str, doc="the NPU name"), call=param(bool, doc="only where it is called")),
        required=True,
        doc="method or property -> replacement",
    )
}
PORTABLE = {
    "attrs": mapping(
        record(
            to=param(str, doc="the generic method"),
            device_arg=param(str, check=template, doc="the device it is given first"),
            device_type_arg=param(
                str, check=template, doc="the device type an index argument is paired with"
            ),
            expression=param(
                str,
                check=lambda v: template(v, "receiver"),
                doc="an expression for the whole use ({receiver}: the object)",
            ),
            negated=param(
                str,
                check=lambda v: template(v, "receiver"),
                doc="the expression for `not <use>` (`x.device.type not in ...`)",
            ),
        ),
        doc="method or property -> its portable form",
    )
}


def refs(rule: Rule) -> str | None:
    attrs = rule.params.get("attrs") or {}
    for attr in rule.portable.get("attrs") or {}:
        if attr not in attrs:
            return f"portable key 'attrs' [{attr!r}]: params.attrs has no {attr!r}"
    return None


def _tokens(rule: Rule, rules) -> set[Token]:
    return {Token(a, rf"\.\s*{re.escape(a)}(?!\w)") for a in rule.params.get("attrs") or {}}


@rule_kind(
    "method-rename",
    engine="python",
    params=PARAMS,
    tokens=_tokens,
    portable=PORTABLE,
    refs=refs,
    reads="code",
)
def run(f: PyFile, rules: list[Rule]) -> None:
    table = {attr: (rule, spec) for rule in rules for attr, spec in (rule.params.get("attrs") or {}).items()}
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
        if f.target == "portable":
            call = parent if is_call and isinstance(parent, ast.Call) else None
            fix = _portable(f, rule, node, call, name_start, end)
        elif f.text[name_start:end] == node.attr and spec.get("to"):
            fix = fix_for(rule, [Edit(name_start, end, spec["to"])], {"attr": node.attr, "to": spec["to"]})
        f.report(rule, name_start, end, {"attr": node.attr, "to": spec.get("to", "")}, fix)


_RANKISH = re.compile(r"(rank|gpu|gpu_id|device_id|idx|index|local_rank|\d+)$", re.IGNORECASE)


@declines
def _portable(f: PyFile, rule: Rule, node: ast.Attribute, call: ast.Call | None, name_start: int, end: int):
    """`.cuda(...)` -> `.to(<device>, ...)`; `x.is_cuda` -> `(x.device.type in ("cuda", "npu"))`,
    `not x.is_cuda` -> `x.device.type not in ("cuda", "npu")` (the row's ``negated`` form)."""
    form = (rule.portable.get("attrs") or {}).get(node.attr)
    if not form or f.text[name_start:end] != node.attr:
        return None
    if "expression" in form:
        receiver = f.source(node.value)
        whole: ast.AST = node
        expression = form["expression"]
        if form.get("negated") and isinstance(parent := f.parent(node), ast.UnaryOp):
            if isinstance(parent.op, ast.Not):  # `not x.is_cuda` -> `x.device.type not in (...)`
                whole, expression = parent, form["negated"]
        code, imports = spell(f, expression, quote_for(f, node), node, receiver=receiver)
        if not bare_ok(f, whole):
            code = f"({code})"
        start, end = f.span(whole)
        return portable_fix(rule, [Edit(start, end, code)], imports, f"`{code}`")
    if call is None:
        return None
    edits = [Edit(name_start, end, form["to"])]
    paren = f.text.find("(", end)
    if paren == -1 or f.text[end:paren].strip():
        return None
    if call.args:  # .cuda(rank): only an index-like argument becomes torch.device(type, index)
        first = call.args[0]
        name = first.attr if isinstance(first, ast.Attribute) else getattr(first, "id", None)
        is_index = (isinstance(first, ast.Constant) and isinstance(first.value, int)) or bool(
            name and _RANKISH.search(name)
        )
        if not is_index or len(call.args) > 1:
            return None
        a, b = f.span(first)
        local = f.devices.local_device(node, index=f.text[a:b])
        if local:  # x.cuda(local_rank) with device = torch.device(f"cuda:{local_rank}")
            device, imports = local, []
        else:
            device, imports = spell(
                f, "torch.device(" + form["device_type_arg"] + ", @ARG@)", quote_for(f, node), node
            )
            device = device.replace("@ARG@", f.text[a:b])
        edits.append(Edit(a, b, device))
    elif any(kw.arg == "device" for kw in call.keywords):
        return None
    else:
        device, imports = spell(f, form["device_arg"], quote_for(f, node), node, bare=True)
        sep = ", " if call.keywords else ""
        edits.append(Edit(paren + 1, paren + 1, device + sep))
    return portable_fix(rule, edits, imports, f"`.to({device}{', ...' if call.keywords else ''})`")


# Receivers on which `.cuda` names a module, not a method (torch.cuda, torch.backends.cuda).
_MODULES = {"torch", "torch.backends"}


def _is_module_chain(f: PyFile, node: ast.Attribute) -> bool:
    parts = chain_parts(node.value)
    if not parts:
        return False
    binding = f.bindings.names.get(parts[0])
    return binding is not None and ".".join([binding.qualname, *parts[1:]]) in _MODULES
