"""Find a module's device helpers from its code: functions that name the device.

A project that already runs on several backends has one place that names the device
(verl ``get_device_name()`` / ``get_torch_device()``, torchtune
``get_torch_device_namespace()``, mmengine ``get_device()``); a portable port routes its
rewrites through it instead of adding its own. What a function is, is decided from its
body, never from its name:

* kind ``type``   — every ``return`` gives a device type: a literal such as "cuda" / "npu" /
  "cpu", ``<x>.type``, ``getattr(<x>, "type", "cpu")``, or another type helper's result;
* kind ``module`` — every ``return`` gives a torch device module: ``torch.cuda``,
  ``torch.npu``, ``getattr(torch, <type>)``, ``torch.get_device_module(...)``;
* kind ``device`` — every ``return`` gives a ``torch.device``;
* kind ``call:<M>`` — a call wrapper of the device modules' member ``M`` (ms-swift's
  ``get_device_count()``): its body is only an if/elif chain (or ternary returns) whose
  vendor arms each ``return torch.<vendor>.M()``, one of them ``torch.npu`` and one
  ``torch.cuda``, and whose other arms return a constant (``0``, ``None``) or do nothing;
* kind ``run:<M>`` — the same with each vendor arm the statement ``torch.<vendor>.M()``
  (``empty_cache()``, ``synchronize()``): it returns nothing, so it stands only for a call
  whose value is dropped.

A wrapper that does more (ms-swift's ``gc_collect`` also calls ``gc.collect()``) is no
helper, nor is a decorated one. A port writes a wrapper's call for ``torch.cuda.M()`` called
without arguments (migrate/scan/python/wrapper_calls.py).

It must take no required argument, and it must reach the NPU: an arm that names NPU, or the
device-generic API (``torch.accelerator``, ``getattr(torch, <type>)``,
``get_device_module``). A CUDA-only function is ordinary code that the port rewrites.
Module-level names bound to a helper's result (``device_name = get_device_name()``) are
helpers of the same kind (not a wrapper's: that is a count or a result, not a helper); a
helper that delegates does so to a type, module or device helper. The template helpers this
tool adds are recognised as written (migrate/core/device_helpers), with their exact kinds
(``amp``, ``backend`` too).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from migrate.core import device_helpers
from migrate.scan.device_types import DEVICE_TYPES
from migrate.scan.npu_names import names_npu

_DEVICE_MODULES = {f"torch.{t}" for t in DEVICE_TYPES if t not in ("meta", "xla")}
_GENERIC = ("accelerator", "get_device_module", "privateuse1")


def _reaches(text: str) -> bool:
    """Names the NPU (migrate/scan/npu_names.py) or the device-generic API."""
    low = text.lower()
    return any(t in low for t in _GENERIC) or names_npu(text)


_GENERIC_GETATTR = "getattr(torch,"

# the kinds of a call wrapper (``<kind>:<member>``): it returns the member's result, or runs
# it as a statement
WRAPPER_KINDS = ("call", "run")


def wrapper_kind(form: str, member: str) -> str:
    """The kind of a wrapper of ``torch.<vendor>.<member>()`` in ``form`` (WRAPPER_KINDS)."""
    return f"{form}:{member}"


def wrapped(kind: str) -> str | None:
    """The member a call wrapper's ``kind`` wraps (None: not a wrapper's kind)."""
    form, sep, member = kind.partition(":")
    return member if sep and form in WRAPPER_KINDS and member.isidentifier() else None


@dataclass(frozen=True)
class Found:
    """A device helper defined in a module."""

    name: str
    kind: str  # type | module | device | amp | backend | call:<M> | run:<M>
    call: bool  # a function to call (False: a module-level variable to read)
    ours: bool = False  # one of the template helpers this tool adds


def find_helpers(
    tree: ast.Module, torch_local: str = "torch", imported: dict[str, Found] | None = None
) -> dict[str, Found]:
    """The device helpers a module defines at top level, by name. ``imported``: helpers of
    other modules this one imports (local name -> Found), usable by delegation."""
    # a wrapper is no value to delegate to: a helper delegates to the other kinds
    known: dict[str, Found] = {n: h for n, h in (imported or {}).items() if wrapped(h.kind) is None}
    found: dict[str, Found] = {}
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    globals_ = _module_assigns(tree)
    for node in funcs:
        kind = device_helpers.recognise(node, torch_local)
        if kind:
            found[node.name] = known[node.name] = Found(node.name, kind, True, ours=True)
        elif (kind := wrapper_of(node, torch_local)) is not None:
            found[node.name] = Found(node.name, kind, True)
    changed = True
    while changed:  # helpers that delegate to helpers defined further down
        changed = False
        for node in funcs:
            if node.name in found or _required_args(node):
                continue
            kind = _returns(node, known, torch_local, globals_)
            if kind and _reaches_npu(node, known, globals_):
                found[node.name] = known[node.name] = Found(node.name, kind, True)
                changed = True
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            callee = stmt.value.func
            if (
                isinstance(callee, ast.Name)
                and callee.id in known
                and not stmt.value.args
                and len(targets) == 1
                and isinstance(targets[0], ast.Name)
            ):
                name = targets[0].id
                found[name] = Found(name, known[callee.id].kind, False)
    return found


def _required_args(node: ast.FunctionDef) -> bool:
    a = node.args
    positional = a.posonlyargs + a.args
    if len(positional) > len(a.defaults):
        return True
    return any(d is None for d in a.kw_defaults)


def _returns(
    node: ast.FunctionDef, known: dict[str, Found], torch_local: str, globals_: dict[str, list[ast.expr]]
) -> str | None:
    values = [r.value for r in _own_returns(node)]
    if not values or any(v is None for v in values) or not _always_returns(node.body):
        return None
    local = {**globals_, **_local_assigns(node)}
    kinds = {_kind(v, known, local, torch_local, 0) for v in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    return kind if kind in ("type", "module", "device") else None


def _always_returns(body: list[ast.stmt]) -> bool:
    """Does every path through ``body`` end in a return or raise (no implicit None)?"""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, ast.Try):
        ok = _always_returns(last.orelse or last.body) and all(_always_returns(h.body) for h in last.handlers)
        return ok or _always_returns(last.finalbody)
    if isinstance(last, ast.With):
        return _always_returns(last.body)
    return False


def _own_returns(node: ast.FunctionDef):
    stack = list(node.body)
    while stack:
        cur = stack.pop()
        if isinstance(cur, ast.Return):
            yield cur
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(c for c in ast.iter_child_nodes(cur) if isinstance(c, ast.stmt))


def _module_assigns(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Module-level ``NAME = value`` bindings, also inside top-level if/try blocks
    (mmengine's ``DEVICE = 'npu'`` chain)."""
    out: dict[str, list[ast.expr]] = {}
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.value)
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for h in getattr(node, "handlers", []):
                stack.extend(h.body)
    return out


def _local_assigns(node: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for t in sub.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(sub.value)
    return out


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _kind(v: ast.AST, known: dict[str, Found], local: dict, torch_local: str, depth: int) -> str | None:
    """The kind of value ``v`` gives (per node type: KINDS), or None."""
    handler = KINDS.get(type(v))
    if depth > 4 or handler is None:
        return None
    return handler(v, known, local, torch_local, depth)


def _one_kind(values, known: dict[str, Found], local: dict, torch_local: str, depth: int) -> str | None:
    """The kind all of ``values`` give, if they agree."""
    kinds = {_kind(x, known, local, torch_local, depth + 1) for x in values}
    return kinds.pop() if len(kinds) == 1 else None


def _constant_kind(v: ast.Constant, known, local, torch_local, depth) -> str | None:
    return "type" if isinstance(v.value, str) and v.value in DEVICE_TYPES else None


def _ifexp_kind(v: ast.IfExp, known, local, torch_local, depth) -> str | None:
    return _one_kind([v.body, v.orelse], known, local, torch_local, depth)


def _name_kind(v: ast.Name, known, local, torch_local, depth) -> str | None:
    if v.id in known:
        return known[v.id].kind if not known[v.id].call else None
    values = local.get(v.id)
    return _one_kind(values, known, local, torch_local, depth) if values else None


def _attribute_kind(v: ast.Attribute, known, local, torch_local, depth) -> str | None:
    if v.attr == "type":
        return "type"  # <device>.type
    dotted = _dotted(v)
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    spelled = "torch." + rest if head == torch_local and rest else dotted
    return "module" if spelled in _DEVICE_MODULES else None


def _call_kind(v: ast.Call, known, local, torch_local, depth) -> str | None:
    func = _dotted(v.func) or ""
    head, _, rest = func.partition(".")
    spelled = "torch." + rest if head == torch_local and rest else func
    if isinstance(v.func, ast.Name) and v.func.id in known and known[v.func.id].call:
        kind = known[v.func.id].kind
        return "type" if kind == "amp" else kind
    if spelled == "torch.device":
        return "device"
    if spelled == "torch.get_device_module":
        return "module"
    if spelled == "torch.accelerator.current_accelerator":
        return "device"
    if func == "getattr" and len(v.args) >= 2:
        obj = _dotted(v.args[0])
        attr = v.args[1]
        if isinstance(attr, ast.Constant) and attr.value == "type":
            return "type"
        if obj == torch_local:
            return "module"
    return None


# Node type -> the kind of device value a node of that type gives (other types give none):
# a device-type literal, either branch, a bound name, <device>.type or torch.<backend>, a call.
KINDS: dict[type, Callable[[Any, dict[str, Found], dict, str, int], str | None]] = {
    ast.Constant: _constant_kind,
    ast.IfExp: _ifexp_kind,
    ast.Name: _name_kind,
    ast.Attribute: _attribute_kind,
    ast.Call: _call_kind,
}


def _reaches_npu(node: ast.FunctionDef, known: dict[str, Found], globals_: dict[str, list[ast.expr]]) -> bool:
    """Does the helper name NPU, use the device-generic API, or delegate to a helper or read a
    module-level name that does?"""
    text = ast.unparse(node)
    if _reaches(text) or _GENERIC_GETATTR in text.replace(" ", ""):
        return True
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in known:
            return True
        if (
            isinstance(sub, ast.Name)
            and sub.id in globals_
            and any(_reaches(ast.unparse(v)) for v in globals_[sub.id])
        ):
            return True
    return False


def wrapper_of(node: ast.FunctionDef, torch_local: str = "torch") -> str | None:
    """The kind (``call:<M>`` / ``run:<M>``) of a call wrapper of the device modules'
    member ``M``, or None: see the module's docstring."""
    if node.decorator_list or _required_args(node):
        return None
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    arms: set[tuple[str, str, str]] = set()  # (form, vendor, member) of each vendor arm
    if not body or not _arms(body, torch_local, arms):
        return None
    forms = {(form, member) for form, _, member in arms}
    vendors = {vendor for _, vendor, _ in arms}
    if len(forms) != 1 or not {"npu", "cuda"} <= vendors:
        return None
    return wrapper_kind(*forms.pop())


def _arms(stmts: list[ast.stmt], torch_local: str, arms: set) -> bool:
    """Is ``stmts`` only an if/elif chain of vendor calls and constants (``arms``: the
    vendor calls)? An ``if`` without ``else`` whose arm returns falls through to the rest."""
    if not stmts:
        return True  # an arm that does nothing
    first = stmts[0]
    if isinstance(first, ast.If):
        after = stmts[1:]
        if after and (first.orelse or not _always_returns(first.body)):
            return False  # what follows runs after the chain, or after its arm too
        return _arms(first.body, torch_local, arms) and _arms(first.orelse or after, torch_local, arms)
    if len(stmts) > 1:
        return False
    if isinstance(first, ast.Pass):
        return True
    if isinstance(first, ast.Return):
        return first.value is None or _returned_arm(first.value, torch_local, arms)
    if isinstance(first, ast.Expr):
        return _vendor_call(first.value, "run", torch_local, arms)
    return False


def _returned_arm(v: ast.expr, torch_local: str, arms: set) -> bool:
    if isinstance(v, ast.IfExp):
        return _returned_arm(v.body, torch_local, arms) and _returned_arm(v.orelse, torch_local, arms)
    if isinstance(v, ast.Constant):
        return v.value is None or (isinstance(v.value, (int, float)) and not isinstance(v.value, bool))
    return _vendor_call(v, "call", torch_local, arms)


def _vendor_call(v: ast.expr, form: str, torch_local: str, arms: set) -> bool:
    """``torch.<vendor>.<member>()``, recorded in ``arms``."""
    if not (isinstance(v, ast.Call) and not v.args and not v.keywords and isinstance(v.func, ast.Attribute)):
        return False
    owner = _dotted(v.func.value)
    head, _, vendor = (owner or "").partition(".")
    if head != torch_local or f"torch.{vendor}" not in _DEVICE_MODULES:
        return False
    arms.add((form, vendor, v.func.attr))
    return True
