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
import re

from migrate.core.findings import Edit, Fix
from migrate.scan.python.portable import (
    bare_ok,
    chain_form,
    declines,
    portable_fix,
    quote_for,
    spell,
    whole_slot,
)
from migrate.scan.python.torch_floors import code_floor
from migrate.scan.python.version_guards import torch_range
from migrate.scan.python.wrapper_calls import wrapper_call

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


def _below(f, version: str | None, node: ast.AST | None = None) -> bool:
    """Is the oldest torch that runs the code at ``node`` older than ``version``? The
    project's declared minimum, else what the file's own code needs (a file handed over alone
    that calls ``torch.cuda.amp.GradScaler()`` keeps a spelling every torch has), raised by
    the torch-version tests around ``node``; and code those tests run only below
    ``version`` (mmengine's ``if ... <= digit_version(TORCH_VERSION) < digit_version('1.10.0'):``)
    is below it whatever the floor (migrate/scan/python/version_guards.py)."""
    if not version:
        return False
    floor = f.file_devices.min_torch if f.file_devices else None
    if floor is None:
        floor = code_floor(f.text)
    want = tuple(int(x) for x in str(version).split(".")[:2])
    if node is not None:
        lowest, below = torch_range(f, node)
        if below is not None and below <= want:
            return True
        if lowest is not None and lowest > floor:
            floor = lowest
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
    if isinstance(form, dict) and _below(f, form.get("min_torch"), node):
        form = None
    if isinstance(form, str):
        if "(" in form or "{" in form:  # an expression standing for the whole use
            code, imports = spell(f, form, q, node, bare=whole_slot(f, node))
            return _fix(rule, [Edit(start, end, code)], values, imports, code)
        code, imports = spell(f, ".".join([form, *rest]), q, node)
        return _fix(rule, [Edit(start, end, code)], values, imports, code)
    if isinstance(form, dict):
        if rest:
            return None
        if not is_call:
            return _decorator_form(f, rule, form, node, values, q)
        return _call_form(f, rule, form, node, parent, values, q)
    default = rule.portable.get("default")
    if default == "module":
        return _module(f, m, node, parts, values, q)
    if default == "branch" and m.new_qualname is not None:
        return _branch(f, m, start, end, source, values, q, node)
    return None


def _call_form(f, rule, form: dict, node, call: ast.Call, values: dict, q: str) -> Fix | None:
    """``torch.cuda.amp.autocast(...)`` -> ``torch.amp.autocast(<amp device type>, ...)``:
    the generic call, the device type first (``device_arg``) or by keyword
    (``device_keyword``), the original's positional arguments passed on by the keywords
    ``keywords`` names where the generic call orders its parameters otherwise."""
    start, end = f.span(node)
    code, imports = spell(f, form["call"], q, node)
    edits = [Edit(start, end, code)]
    paren = f.text.find("(", end)
    if paren == -1 or f.text[end:paren].strip():
        return None
    names = form.get("keywords") or []
    inserts: dict[int, str] = {}  # one insertion per place: two at one point conflict
    if names:
        if len(call.args) > len(names) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        for a, k in zip(call.args, names, strict=False):
            inserts[f.span(a)[0]] = f"{k}="
    shown = code + "("
    if form.get("device_arg"):
        arg, more = spell(f, "{" + form["device_arg"] + "}", q, node, bare=True)
        imports += more
        sep = ", " if call.args or call.keywords else ""
        inserts[paren + 1] = arg + sep + inserts.get(paren + 1, "")
        shown += arg + (", ...)" if sep else ")")
    elif form.get("device_keyword"):
        if any(k.arg == form["device_keyword"] for k in call.keywords):
            return None
        arg, more = spell(f, "{" + form["device_keyword_value"] + "}", q, node, bare=True)
        imports += more
        given = [*call.args, *call.keywords]
        if call.args:  # after them: a keyword may not come before a positional argument
            at = f.span(call.args[-1])[1]
            edits.append(Edit(at, at, f", {form['device_keyword']}={arg}"))
        else:
            sep = ", " if call.keywords else ""
            edits.append(Edit(paren + 1, paren + 1, f"{form['device_keyword']}={arg}{sep}"))
        shown += f"{form['device_keyword']}={arg}" + (", ...)" if given else ")")
    edits += [Edit(at, at, text) for at, text in sorted(inserts.items())]
    return _fix(rule, edits, values, imports, shown)


def _decorator_form(f, rule, form: dict, node, values: dict, q: str) -> Fix | None:
    """``@torch.cuda.amp.custom_fwd`` (a decorator, not called) -> ``@torch.amp.custom_fwd(
    device_type=<amp device type>)``, which returns the same decorator."""
    parent = f.parent(node)
    if not form.get("device_keyword") or not any(d is node for d in getattr(parent, "decorator_list", ())):
        return None
    start, end = f.span(node)
    code, imports = spell(f, form["call"], q, node)
    arg, more = spell(f, "{" + form["device_keyword_value"] + "}", q, node, bare=True)
    new = f"{code}({form['device_keyword']}={arg})"
    return _fix(rule, [Edit(start, end, new)], values, imports + more, new)


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
    rest = parts[covered:]
    if rest and f.devices.accelerator(node) is not None:  # get_accelerator().synchronize()
        code, imports = spell(f, "{device_module}." + rest[0], q, node)
        new = ".".join([code, *rest[1:]])
        return _fix(m.entry.rule, [Edit(start, end, new)], values, imports, new)
    wrapper = _wrapper(f, node, rest)
    if wrapper is not None:  # the project's get_device_count() for torch.cuda.device_count()
        code, imports = wrapper
        return _fix(m.entry.rule, [Edit(start, end, code)], values, imports, code + "()")
    code, imports = spell(f, "{device_module}", q, node)
    if parts[covered:] == ["is_available"] and " if " in code:
        return _available(f, m, node, code, values, imports)
    new = ".".join([code, *parts[covered:]])
    return _fix(m.entry.rule, [Edit(start, end, new)], values, imports, new)


def _wrapper(f, node, rest: list[str]) -> tuple[str, list[str]] | None:
    """The project's wrapper of ``torch.cuda.<member>()`` called without arguments (the
    chain ``node``), spelled without its call's parentheses (the call's own stay), or None."""
    call = f.parent(node)
    if len(rest) != 1 or not (isinstance(call, ast.Call) and call.func is node):
        return None
    if call.args or call.keywords:
        return None
    dropped = isinstance(f.parent(call), ast.Expr)
    found = wrapper_call(f.devices, rest[0], call, dropped)
    if found is None or not found[0].endswith("()"):
        return None
    return found[0][:-2], found[1]


def _available(f, m, node, module: str, values: dict, imports: list[str]) -> Fix | None:
    """``torch.cuda.is_available()`` where the NPU is spelled through a check: CUDA's test
    stays and the NPU's joins it (``torch.cuda.is_available() or is_npu_available()``)."""
    call = f.parent(node)
    found = _CHECK_OF.search(module)
    if not (isinstance(call, ast.Call) and call.func is node and not call.args and not call.keywords):
        return None
    if found is None:
        return None
    start, end = f.span(call)
    code = f"{f.text[start:end]} or {found.group(1)}"
    if not bare_ok(f, call, lowest="or"):
        code = f"({code})"
    return _fix(m.entry.rule, [Edit(start, end, code)], values, imports, code)


_CHECK_OF = re.compile(r" if (\w+\(\)) else ")


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
