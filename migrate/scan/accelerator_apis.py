"""Accelerator APIs a project already routes its device code through (rules/accelerator_apis.yaml).

DeepSpeed's ``get_accelerator()`` (or a project's own object of that shape) names the device
on every backend it supports, the NPU among them: a portable port spells the device through
it (``get_accelerator().device_name()``, ``get_accelerator().synchronize()``), never adding a
second abstraction beside it. The table is data with a typed schema, checked when it loads.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import yaml

from migrate.core.errors import RuleError
from migrate.core.resources import rules_dir
from migrate.core.schema import mapping, param, problems, record, strings

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
_MEMBER = re.compile(r"[A-Za-z_]\w*(?:\(\))?\Z")  # a method call without arguments, or an attribute


def _matches(pattern: re.Pattern, what: str):
    def check(value) -> str | None:
        return None if isinstance(value, str) and pattern.match(value) else f"not {what}: {value!r}"

    return check


_ENTRY = record(
    modules=strings(
        "where a file imports the getter from", required=True, check=_matches(_DOTTED, "a module")
    ),
    getter=param(str, required=True, check=_matches(_IDENT, "a name")),
    own_getter=param(bool, doc="a package's own function of the getter's name counts too"),
    type=param(str, required=True, check=_matches(_MEMBER, "a method call or attribute")),
    backend=param(str, check=_matches(_MEMBER, "a method call or attribute")),
    methods=mapping(
        param(str, check=_matches(_IDENT, "a name")), "torch.cuda.<name> -> method", required=True
    ),
)
_SCHEMA = {"accelerator_apis": mapping(_ENTRY, required=True)}


@dataclass(frozen=True)
class AcceleratorApi:
    name: str
    modules: tuple[str, ...]
    getter: str
    own_getter: bool
    type: str  # after the getter's call: "device_name()"
    backend: str | None
    methods: Mapping[str, str]  # torch.cuda.<name> -> the object's method


@cache
def accelerator_apis(path: str | None = None) -> tuple[AcceleratorApi, ...]:
    """The table (``path``: another file, for tests); RuleError where it breaks the schema."""
    file = rules_dir() / "accelerator_apis.yaml" if path is None else path
    text = open(file, encoding="utf-8").read()
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise RuleError(f"{file}: must be a mapping")
    why = problems(_SCHEMA, data, "", what="key")
    if why is not None:
        raise RuleError(f"{file}: {why}")
    out = []
    for name, e in data["accelerator_apis"].items():
        for key in (*e["methods"], *e["methods"].values()):
            if not _IDENT.match(str(key)):
                raise RuleError(f"{file}: {name}: method {key!r} is not a name")
        out.append(
            AcceleratorApi(
                name,
                tuple(e["modules"]),
                e["getter"],
                bool(e.get("own_getter", False)),
                e["type"],
                e.get("backend"),
                dict(e["methods"]),
            )
        )
    return tuple(out)


def api_of(module: str, name: str) -> AcceleratorApi | None:
    """The API whose getter ``module.name`` is: a listed module's, or (``own_getter``) a
    project module's function of the getter's name."""
    for api in accelerator_apis():
        if name == api.getter and (module in api.modules or api.own_getter):
            return api
    return None


def bound_getter(f) -> tuple[str, AcceleratorApi] | None:
    """(the local name, the API) of a listed getter the file imports by name at module
    level (a plain statement of the module body): one imported inside a function, ``try``
    or ``if`` is not bound where the port would call it, and importing it at the top would
    make an optional dependency required."""
    import ast

    top = [s for s in f.tree.body if isinstance(s, ast.ImportFrom) and not s.level and s.module]
    for api in accelerator_apis():
        for stmt in top:
            if stmt.module in api.modules:
                for alias in stmt.names:
                    if alias.name == api.getter:
                        return alias.asname or alias.name, api
    return None


def imports_getter(text: str) -> tuple[str, str] | None:
    """(module, getter) of a listed getter a file's text imports at module level, where it
    is a dependency (found without parsing): an import inside a function, ``try`` or ``if``
    is an optional one (transformers imports deepspeed's getter only in its DeepSpeed
    integration), which the port must not make every file of the package require."""
    for api in accelerator_apis():
        for module in api.modules:
            if re.search(
                rf"^from[ \t]+{re.escape(module)}[ \t]+import[^\n]*\b{api.getter}\b", text, re.MULTILINE
            ):
                return module, api.getter
    return None


def defines_getter(text: str) -> str | None:
    """The getter name an ``own_getter`` API allows that ``text`` defines at top level."""
    for api in accelerator_apis():
        if api.own_getter and re.search(rf"^def[ \t]+{api.getter}[ \t]*\(", text, re.MULTILINE):
            return api.getter
    return None


def getter_returns(text: str, getter: str) -> frozenset[str]:
    """The classes whose instances the top-level function ``getter`` of ``text`` returns:
    ``return CudaAccelerator()``, or a name the function or the module binds to such a call
    (DeepSpeed's ``ds_accelerator = CUDA_Accelerator()`` ... ``return ds_accelerator``).
    Empty where it returns nothing of the kind or ``text`` does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    fn = next(
        (s for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == getter),
        None,
    )
    if fn is None:
        return frozenset()
    bound: dict[str, set[str]] = {}
    for node in (*ast.walk(fn), *tree.body):
        if isinstance(node, ast.Assign) and _called(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, set()).add(_called(node.value))
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            out |= {_called(value)} if _called(value) else bound.get(getattr(value, "id", ""), set())
    return frozenset(out)


def _called(node) -> str:
    """``X`` of a call ``X(...)`` or ``m.X(...)``, else ""."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


_MIRRORS = re.compile(r"^[ \t]+def[ \t]+device_name[ \t]*\([ \t]*self\b", re.MULTILINE)


def mirrors_cuda(text: str) -> bool:
    """Does ``text`` define an accelerator object's ``device_name`` method?"""
    return bool(_MIRRORS.search(text))


def mirror_classes(text: str) -> frozenset[str]:
    """The classes of ``text`` that define an accelerator object's ``device_name(self, ...)``
    method: the objects an own getter must return to be the package's accelerator API."""
    if not mirrors_cuda(text):
        return frozenset()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(
        c.name
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef)
        and any(
            isinstance(m, ast.FunctionDef)
            and m.name == "device_name"
            and m.args.args[:1]
            and m.args.args[0].arg == "self"
            for m in c.body
        )
    )
