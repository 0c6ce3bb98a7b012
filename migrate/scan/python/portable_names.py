"""--target portable for ``qualified-name`` rows: torch.cuda.X through the device-generic API.

A row's ``portable:`` mapping gives, per qualified name, the generic spelling
(``torch.cuda.synchronize: torch.accelerator.synchronize``), a call that needs the device
type first (``{call: torch.amp.autocast, device_arg: amp_device_type}``) or an expression
that replaces the whole use. Names without an entry get, with ``default: branch``, an NPU arm
beside the CUDA one, ``(torch.npu.X if hasattr(torch, "npu") else torch.cuda.X)``: on a host
with torch_npu (autoloaded by ``import torch``) the NPU API, elsewhere exactly the original.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, Fix
from migrate.core.findings import fix_for as make_fix
from migrate.scan.python.portable import chain_form, quote_for, spell

BRANCH = '({npu} if hasattr(torch, "npu") else {cuda})'


def portable_form(rule, qualname: str):
    names = rule.portable.get("names") or {}
    segs = qualname.split(".")
    for i in range(len(segs), 0, -1):
        key = ".".join(segs[:i])
        if key in names:
            return names[key], segs[i:]
        if key + ".*" in names:
            return names[key + ".*"], segs[i:]
    return None, []


def portable_use(f, m, node: ast.AST, parts: list[str], parent, values: dict) -> Fix | None:
    """The portable fix for one use of ``m.qualname`` (the chain ``node``), or None."""
    rule = m.entry.rule
    start, end = f.span(node)
    source = f.text[start:end]
    if source != ".".join(parts):
        return None
    form, rest = portable_form(rule, m.qualname)
    is_call = isinstance(parent, ast.Call) and parent.func is node
    q = quote_for(f, node)
    if isinstance(form, str):
        if "(" in form:  # an expression standing for the whole use
            code, imports = spell(f, form, q)
        else:
            code, imports = spell(f, ".".join([form, *rest]))
        return make_fix(rule, [Edit(start, end, code)], values, imports,
                        description=f"Portable: `{code}`")
    if isinstance(form, dict):
        if not is_call or rest:
            return None
        code, imports = spell(f, form["call"])
        edits = [Edit(start, end, code)]
        if form.get("device_arg"):
            arg, more = spell(f, "{" + form["device_arg"] + "}", q)
            imports += more
            paren = f.text.find("(", end)
            if paren == -1 or f.text[end:paren].strip():
                return None
            sep = ", " if parent.args or parent.keywords else ""
            edits.append(Edit(paren + 1, paren + 1, arg + sep))
        return make_fix(rule, edits, values, imports, description=f"Portable: `{code}(...)`")
    if rule.portable.get("default") != "branch" or m.new_qualname is None:
        return None
    return _branch(f, m, start, end, source, values, q)


def _branch(f, m, start: int, end: int, source: str, values: dict, q: str) -> Fix | None:
    new = m.new_qualname
    old_segs, new_segs = m.qualname.split("."), new.split(".")
    src_segs = source.split(".")
    # torch.cuda.X -> torch.npu.X: branch on the module only, the rest stays as written.
    common = 0
    while (common < min(len(old_segs), len(new_segs)) - 0 and
           old_segs[-1 - common] == new_segs[-1 - common] and common < len(src_segs) - 1):
        common += 1
    npu_segs = new_segs[:len(new_segs) - common]
    cuda_src = ".".join(src_segs[:len(src_segs) - common])
    tail = ".".join(src_segs[len(src_segs) - common:])
    npu = chain_form(f, ".".join(npu_segs))
    local = f.bindings.local_for(npu)
    if local and not npu.startswith("torch.npu"):
        npu = local
    if npu.startswith("torch_npu"):
        return None  # a submodule only torch_npu spells: no portable branch without an import
    code, imports = spell(f, BRANCH.replace("{npu}", npu).replace("{cuda}", "@CUDA@"), q)
    code = code.replace("@CUDA@", cuda_src) + ("." + tail if tail else "")
    return make_fix(m.entry.rule, [Edit(start, end, code)], values, imports,
                    description=f"Portable: `{code}`")
