"""--target portable for ``qualified-name`` rows: torch.cuda.X through the device helpers.

A row's ``portable:`` mapping gives, per qualified name, a generic spelling
(``torch.cuda.OutOfMemoryError: torch.OutOfMemoryError``), an expression that replaces the
whole use (``'{dist_backend}'``), or a call that takes the device type first
(``{call: torch.amp.autocast, device_arg: amp_device_type, min_torch: "1.10"}``: below the
project's declared minimum torch the default form is used instead). Names without an entry
get the row's ``default``:

* ``module`` — the ``torch.cuda`` part becomes the device module helper,
  ``torch.cuda.empty_cache()`` -> ``get_device_module().empty_cache()`` (torch.npu on an
  Ascend host, torch.cuda elsewhere: exactly the original off the NPU);
* ``branch`` — for names torch.npu spells differently, the NPU name beside the CUDA one,
  ``(torch.npu.NPUGraph if get_device_type() == "npu" else torch.cuda.CUDAGraph)``.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, Fix
from migrate.scan.python.portable import chain_form, declines, portable_fix, quote_for, spell

BRANCH = '({npu} if {device_type} == "npu" else {cuda})'
CUDA_MODULE = "torch.cuda"


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


def _below(f, version: str | None) -> bool:
    """Is the project's declared minimum torch older than ``version``?"""
    floor = f.file_devices.min_torch if f.file_devices else None
    if not version or floor is None:
        return False
    want = tuple(int(x) for x in str(version).split(".")[:2])
    return floor < want


@declines
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
    if isinstance(form, dict) and _below(f, form.get("min_torch")):
        form = None
    if isinstance(form, str):
        if "(" in form or "{" in form:  # an expression standing for the whole use
            code, imports = spell(f, form, q, node)
            return _fix(rule, [Edit(start, end, code)], values, imports, code)
        code, imports = spell(f, ".".join([form, *rest]), q, node)
        return _fix(rule, [Edit(start, end, code)], values, imports, code)
    if isinstance(form, dict):
        if not is_call or rest:
            return None
        code, imports = spell(f, form["call"], q, node)
        edits = [Edit(start, end, code)]
        shown = code + "("
        if form.get("device_arg"):
            arg, more = spell(f, "{" + form["device_arg"] + "}", q, node)
            imports += more
            paren = f.text.find("(", end)
            if paren == -1 or f.text[end:paren].strip():
                return None
            sep = ", " if parent.args or parent.keywords else ""
            edits.append(Edit(paren + 1, paren + 1, arg + sep))
            shown += arg + (", ...)" if sep else ")")
        return _fix(rule, edits, values, imports, shown)
    default = rule.portable.get("default")
    if default == "module":
        return _module(f, m, node, parts, values, q)
    if default == "branch" and m.new_qualname is not None:
        return _branch(f, m, start, end, source, values, q, node)
    return None


def _module(f, m, node, parts: list[str], values: dict, q: str) -> Fix | None:
    """torch.cuda[.rest] -> {device_module}[.rest], the rest as written."""
    if not (m.qualname == CUDA_MODULE or m.qualname.startswith(CUDA_MODULE + ".")):
        return None
    binding = f.bindings.names.get(parts[0])
    if binding is None:
        return None
    covered = len(parts) - (len(m.qualname.split(".")) - len(CUDA_MODULE.split(".")))
    if covered < 1 or ".".join([binding.qualname, *parts[1:covered]]) != CUDA_MODULE:
        return None
    start, end = f.span(node)
    code, imports = spell(f, "{device_module}", q, node)
    new = ".".join([code, *parts[covered:]])
    return _fix(m.entry.rule, [Edit(start, end, new)], values, imports, new)


def _branch(f, m, start: int, end: int, source: str, values: dict, q: str, node) -> Fix | None:
    new = m.new_qualname
    old_segs, new_segs = m.qualname.split("."), new.split(".")
    src_segs = source.split(".")
    # torch.cuda.X -> torch.npu.X: branch on the differing part only, the rest as written.
    common = 0
    while (
        common < min(len(old_segs), len(new_segs))
        and old_segs[-1 - common] == new_segs[-1 - common]
        and common < len(src_segs) - 1
    ):
        common += 1
    npu_segs = new_segs[: len(new_segs) - common]
    cuda_src = ".".join(src_segs[: len(src_segs) - common])
    tail = ".".join(src_segs[len(src_segs) - common :])
    npu = chain_form(f, ".".join(npu_segs))
    local = f.bindings.local_for(npu)
    if local and not npu.startswith("torch.npu"):
        npu = local
    if npu.startswith("torch_npu"):
        return None  # a submodule only torch_npu spells: no portable branch without an import
    code, imports = spell(f, BRANCH.replace("{npu}", npu).replace("{cuda}", "@CUDA@"), q, node)
    code = code.replace("@CUDA@", cuda_src) + ("." + tail if tail else "")
    return _fix(m.entry.rule, [Edit(start, end, code)], values, imports, code)


def _fix(rule, edits: list[Edit], values: dict, imports: list[str], shown: str) -> Fix:
    """The fix, described by what its edit writes (the row's fix title names the NPU form)."""
    return portable_fix(rule, edits, imports, f"`{shown}`")
