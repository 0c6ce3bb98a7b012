"""How a portable rewrite names the device at one place in one file.

Rule rows write their portable forms with placeholders (``{device_type}.``, ...); this
module decides what each one spells at a given node, in this order:

1. a ``device`` variable or parameter in scope, where a device is meant (``x.cuda()`` ->
   ``x.to(device)``);
2. a helper the file itself defines or reads (``device_name = get_device_name()``);
3. the project's helper for that question (migrate/scan/project/), imported by name;
4. the port's own helper (migrate/core/device_helpers): imported from
   ``<package>/_device.py`` in a package, defined once in the file for a script.

Placeholders: ``{device_type}`` ("cuda"/"npu"/"cpu"), ``{device}`` (a device where one is
meant; falls back to the type), ``{device_module}`` (torch.npu / torch.cuda),
``{amp_device_type}`` (autocast and GradScaler) and ``{dist_backend}`` ("hccl" / "nccl").
Never an inline multi-call expression: every spelling is a name or one call.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from migrate.core import device_helpers
from migrate.core.targets import DEVICE_PLACEHOLDERS
from migrate.scan.helper_finder import Found, find_helpers
from migrate.scan.project import SCRIPT, FileDevices
from migrate.scan.python import accelerator_api
from migrate.scan.python.bindings import Bindings, relative_bindings
from migrate.scan.python.device_scope import (
    _assignments,
    _binds,
    _blocks,
    _bound_in,
    _device_param,
    _devicish,
    _makes_torch_device,
    _runs_inside,
    _self_device,
    _TopLevel,
    torch_binding,
)
from migrate.scan.python.npu_checks import (
    bound_check,
    family_check,
    family_through,
    importable_check,
    own_check,
    package_check,
)
from migrate.scan.python.quotes import dominant_quote, lexed_quote
from migrate.scan.python.unspellable import Unspellable

PLACEHOLDERS = DEVICE_PLACEHOLDERS
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_DEVICE_NAMES = ("device",)


# a kind spelled through an NPU check (``{check}``: its call), as upstream ports write it;
# off the NPU each is what the CUDA code said
_THROUGH = {
    "type": '"npu" if {check} else "cuda"',
    "amp": '"npu" if {check} else "cuda"',
    "module": "torch.npu if {check} else torch.cuda",
    "backend": '"hccl" if {check} else "nccl"',
}
_THROUGH_CHECK = re.compile(r'"npu" if (\w+\(\)) else "cuda"')
_TYPE_IS_NPU = re.compile(r"""\{device_type\}\s*(==|!=)\s*(["'])npu\2""")


def _loose(code: str) -> bool:
    """A conditional expression not already in parentheses."""
    return " if " in code and not (code.startswith("(") and code.endswith(")"))


def _slot(template: str, m: re.Match, bare: bool) -> bool:
    """Does the placeholder ``m`` fill a whole slot: a call argument or keyword value of the
    template, or (``bare``) the whole template, which the caller puts in one?"""
    before, after = template[: m.start()].rstrip(), template[m.end() :].lstrip()
    if not before and not after:
        return bare
    opens = before.endswith(("(", "[", ",")) or (
        before.endswith("=") and not before.endswith(("==", "!=", "<=", ">="))
    )
    return opens and after[:1] in (")", "]", ",")


class DeviceNames:
    def __init__(self, f, fd: FileDevices | None):
        self.f = f
        self.fd = fd or SCRIPT
        self.torch = f.bindings.local_for("torch") or "torch"
        imported = {}
        for ref in self.fd.helpers:
            for module in (*ref.publics, ref.module):
                local = f.bindings.local_for(f"{module}.{ref.name}")
                if local and "." not in local:
                    imported[local] = Found(local, ref.kind, ref.call, ref.ours)
        self.own = find_helpers(f.tree, self.torch, imported)  # defined or bound in this file
        self.imported = imported
        self.planned: set[str] = set()  # port helpers this file's fixes define in the file
        self.used_imports: set[str] = set()
        # Per-file indexes, built once: asking them per finding keeps a file with thousands
        # of findings linear (a walk of the module body per finding was quadratic).
        self._assigned: dict[tuple[int, str], list[Any]] = {}
        self._top: _TopLevel | None = None
        self._quote: str | None = None
        self._torch_binding: str | None = ""  # "": not computed yet
        self._relative_bindings: Bindings | None = None
        self._bound: dict[int, set[str]] = {}  # id(function) -> the names it binds

    @property
    def top(self) -> _TopLevel:
        if self._top is None:
            self._top = _TopLevel(self.f.tree.body)
        return self._top

    @property
    def torch_binding(self) -> str | None:
        """How the file binds torch (device_scope.torch_binding): where it is optional
        ("guarded", "local"), a helper module the port imports (it imports torch) would
        make it required, and where only functions import it ("local"), a helper the port
        pastes would read an unbound ``torch``."""
        if self._torch_binding == "":
            self._torch_binding = torch_binding(self.f.tree)
        return self._torch_binding

    @property
    def quote(self) -> str:
        """The quote the file writes its strings with (migrate/scan/python/quotes.py)."""
        if self._quote is None:
            self._quote = lexed_quote(self.f.text.encode("utf-8", "surrogatepass")) or dominant_quote(
                self.f.text, self.f.walk(ast.Constant), self.f.span
            )
        return self._quote

    # ----------------------------------------------------------------------------------
    def spell(self, template: str, node: ast.AST | None, bare: bool = False) -> tuple[str, list[str]]:
        """``template`` with its placeholders spelled for ``node``: (code, imports). A spelling
        through an NPU check (``"npu" if is_npu_available() else "cuda"``) is parenthesised
        unless it fills a whole slot of the template (a call argument) or, ``bare``, the
        template is the placeholder alone and the caller puts it in a whole slot;
        ``{device_type} == "npu"`` is the check itself."""
        imports: list[str] = []
        template = self._through_accelerator(template, node, imports)
        template = self._checks_in(template, node, imports)

        def one(m: re.Match) -> str:
            code, more = self.name(PLACEHOLDERS[m.group(1)], node)
            imports.extend(more)
            if _loose(code) and not _slot(template, m, bare):
                code = f"({code})"
            return code

        return _PLACEHOLDER.sub(one, template), imports

    def _through_accelerator(self, template: str, node, imports: list[str]) -> str:
        return accelerator_api.through_accelerator(self, template, node, imports)

    def accelerator(self, node):
        """The project's accelerator object at ``node`` (accelerator_api.accelerator_at)."""
        return accelerator_api.accelerator_at(self, node)

    def _checks_in(self, template: str, node, imports: list[str]) -> str:
        """``{device_type} == "npu"`` (or ``!=``) as the check the type is spelled with."""

        def one(m: re.Match) -> str:
            code, more = self.name("type", node)
            found = _THROUGH_CHECK.fullmatch(code)
            if found is None:
                return m.group()
            imports.extend(more)
            return found.group(1) if m.group(1) == "==" else f"not {found.group(1)}"

        return _TYPE_IS_NPU.sub(one, template)

    def name(self, kind: str, node: ast.AST | None) -> tuple[str, list[str]]:
        if kind == "device":
            local = self.local_device(node) if node is not None else None
            if local:
                return local, []
            kind = "type"
        accel = self.accelerator(node) if kind != "check" else None
        if accel is not None:
            return accelerator_api.spell_kind(self, kind, node, accel)
        if kind == "backend":
            hit = self._found("backend", node)
            if hit is None and (typed := self.project_helper("type", node)) is not None:
                code, imports = typed
                return f'("hccl" if {code} == "npu" else "nccl")', imports
        if kind == "amp":
            local = self.local_device_object(node) if node is not None else None
            if local:  # the device in scope decides: torch.autocast(device.type)
                return f"{local}.type", []
            hit = self._found("amp", node)
            if hit is None and (typed := self.project_helper("type", node)) is not None:
                return typed
        hit = self._found(kind, node)
        if hit is not None:
            return hit
        check = self._check(node)
        if check is not None:
            code, imports = check
            return _THROUGH[kind].format(check=code), imports
        return self._ours(kind)

    def _check(self, node) -> tuple[str, list[str]] | None:
        """The NPU check this file spells its device decisions with (migrate/scan/python/
        npu_checks.py): a library's the file imports, the file's own, or in a script without
        a helper module the port's one function, defined once; None in a package, whose
        port imports from its helper module."""
        local = bound_check(self.f)
        if local:
            return f"{local}()", []
        own = own_check(self.f)
        if own is not None and not self._shadowed(own.name, node) and self._defined_before(own.name, node):
            return f"{own.name}()", []
        family = family_check(self.f)  # the project's own family before a library's check
        if family is not None and not self._shadowed(family[0], node):
            name, stmt = family
            # in the family's module, the member is added after its siblings: module-level
            # code runs before it is defined
            inside = node is None or self._function_of(node) is not None
            if (stmt is None and inside) or (stmt is not None and not self._taken(name)):
                return f"{name}()", [stmt] if stmt else []
        through = family_through(self.f)  # `dev.is_npu_available()` beside `dev.is_cuda_available()`
        if through is not None and not self._shadowed(through.split(".")[0], node):
            return f"{through}()", []
        library = importable_check(self.f)
        if library is not None and not self._taken(library[1]) and not self._shadowed(library[1], node):
            return f"{library[1]}()", [f"from {library[0]} import {library[1]}"]
        name = device_helpers.NAMES["check"]
        if name in self.top.imported and not self._shadowed(name, node):
            return f"{name}()", []  # `from .import_utils import is_npu_available`: the file's own
        sibling = package_check(self.f)  # trl: `from transformers import is_torch_npu_available`
        if sibling is not None and not self._taken(sibling[1]) and not self._shadowed(sibling[1], node):
            return f"{sibling[1]}()", [f"from {sibling[0]} import {sibling[1]}"]
        fd = self.fd
        if fd.add_module and fd.add_module != fd.module:
            return None
        if self._taken(name) or self.torch_binding == "local":
            return None
        self.planned.add(name)
        return f"{name}()", []

    # ----------------------------------------------------------------------------------
    def _found(self, kind: str, node) -> tuple[str, list[str]] | None:
        """A helper of ``kind`` the file has (variable, function, import) or the project
        has (imported on use)."""
        for found in self.own.values():
            if found.kind == kind and not found.call and self._readable(found.name, node):
                return found.name, []
        for found in self.own.values():
            if (
                found.kind == kind
                and found.call
                and not self._shadowed(found.name, node)
                and self._defined_before(found.name, node)
            ):
                return f"{found.name}()", []
        ref = self.fd.helper(kind)
        if ref is not None and ref.module != self.fd.module:
            if not ref.call:
                return None  # a module-level variable of another module: not imported
            for module in (*ref.publics, ref.module):
                local = self.local_for(f"{module}.{ref.name}")
                # a name, or a short path through a bound subpackage (`utils.helper`);
                # never a long path through the top package (`mmengine.device.utils.x`)
                if local and local.count(".") <= (0 if module == ref.module else 1):
                    return f"{local}()", []
            if self._taken(ref.name) or self.torch_binding in ("guarded", "local"):
                return None
            return f"{ref.name}()", [self._import(ref.import_from(self.fd.module), ref.name)]
        return None

    def local_for(self, qualname: str) -> str | None:
        """How the file spells ``qualname`` through its imports, relative ones included."""
        if self._relative_bindings is None:  # once per file
            package = self.f.rel.endswith("__init__.py")
            self._relative_bindings = relative_bindings(self.f.tree, self.fd.module or "", package)
        return self.f.bindings.local_for(qualname) or self._relative_bindings.local_for(qualname)

    def project_helper(self, kind: str, node) -> tuple[str, list[str]] | None:
        """The project's own ``kind`` helper (not the port's) spelled at ``node``, if any."""
        ref = self.fd.helper(kind)
        if any(h.kind == kind and not h.ours for h in self.own.values()) or (ref and not ref.ours):
            return self._found(kind, node)
        return None

    def _ours(self, kind: str) -> tuple[str, list[str]]:
        name = device_helpers.NAMES[kind]
        if self._taken(name):
            raise Unspellable(f"`{name}` is already bound in this file")
        adds_import = bool(self.fd.add_module and self.fd.add_module != self.fd.module)
        if self.torch_binding == "local" or (adds_import and self.torch_binding == "guarded"):
            raise Unspellable("torch is optional in this file: the helper would need it at module level")
        fd = self.fd
        if fd.add_module and fd.add_module != fd.module:
            if self._imported_by_ours():
                raise Unspellable(f"{fd.add_module} imports this module: the import would be circular")
            return f"{name}()", [self._import(fd.add_module, name)]
        self.planned.add(name)
        return f"{name}()", []

    def _imported_by_ours(self) -> bool:
        """Does the added helper module import this one (it builds on the project's type
        helper: mmengine/_device.py imports get_device from mmengine.device, defined in
        mmengine/device/utils.py)? The module defining the helper, the package re-exporting it
        and the packages above them run first; importing the added module there is circular."""
        fd, own = self.fd, self.fd.module
        if fd.type_from is None or not own:
            return False
        chain = {fd.type_from[0]} | {h.module for h in fd.helpers if h.kind == "type" and not h.ours}
        return any(m == own or m.startswith(own + ".") for m in chain)

    def _import(self, module: str, name: str) -> str:
        stmt = f"from {self._relative(module)} import {name}"
        self.used_imports.add(stmt)
        return stmt

    def _relative(self, module: str) -> str:
        """``module`` as this file imports its own package: absolutely where it only does
        so, relatively where it only does so, and where it does both, relatively within
        its own folder and absolutely beyond it (ms-swift's ``from swift.utils import ...``
        beside ``from .arguments import ...``). A file that imports none of its package
        follows most of the package's files (FileDevices.relative_imports)."""
        own = self.fd.module
        if not own:
            return module
        top = own.split(".")[0]
        if self.top.main_guard and not self.top.relative_import:
            return module  # also run as a script (by path), where a relative import fails
        absolute, relative = top in self.top.absolute_from, self.top.relative_import
        if not absolute and not relative:
            relative = bool(self.fd.relative_imports)
        if not relative:
            return module
        spelled = self._relative_form(own, module)
        return module if absolute and spelled.startswith("..") else spelled

    def _relative_form(self, own: str, module: str) -> str:
        """``module`` imported relatively from the module ``own`` (this file)."""
        here = own.split(".")
        if not self.f.rel.endswith("__init__.py"):
            here = here[:-1]
        target = module.split(".")
        common = 0
        while common < min(len(here), len(target) - 1) and here[common] == target[common]:
            common += 1
        if common == 0:
            return module
        return "." * (len(here) - common + 1) + ".".join(target[common:])

    def _taken(self, name: str) -> bool:
        """Is ``name`` bound in the file to something that is not the port's helper?"""
        if name in self.f.bindings.names:
            return not self.f.bindings.names[name].qualname.endswith(f"{device_helpers.MODULE_NAME}.{name}")
        found = self.own.get(name)
        if found is not None:
            return not found.ours
        return name in self.top.defs or name in self.top.classes

    # ----------------------------------------------------------------------------------
    def _readable(self, name: str, node) -> bool:
        """A module-level variable can be read at ``node``: inside a function (it runs
        later), or after its assignment, and no local binding hides it."""
        if node is None or self._shadowed(name, node):
            return False
        if self._function_of(node) is not None:
            return True
        stmt = self.top.first_assign.get(name)
        return stmt is not None and self.f.span(stmt)[1] <= self.f.span(node)[0]

    def _defined_before(self, name: str, node) -> bool:
        """A function of this module can be called at ``node``: inside a function (it runs
        after the module is loaded), or below its definition."""
        if node is None or self._function_of(node) is not None:
            return True
        start = self.f.span(node)[0]
        return any(self.f.span(n)[1] <= start for n in self.top.defs.get(name, ()))

    def _shadowed(self, name: str, node) -> bool:
        cur = self.f.parent(node) if node is not None else None
        while cur is not None:
            if isinstance(cur, _FUNCS):
                bound = self._bound.get(id(cur))
                if bound is None:  # walked once per function, not once per finding in it
                    bound = self._bound[id(cur)] = _bound_in(cur)
                if name in bound:
                    return True
            cur = self.f.parent(cur)
        return False

    def _function_of(self, node):
        """The function whose code holds ``node`` (a def's decorator runs where the def is)."""
        child, cur = node, self.f.parent(node)
        while cur is not None and not (isinstance(cur, _FUNCS) and _runs_inside(cur, child)):
            child, cur = cur, self.f.parent(cur)
        return cur

    def local_device(self, node, index: str | None = None) -> str | None:
        """A ``device`` variable or parameter that holds the device at ``node``, or None.
        With ``index`` (the source of a device index, ``local_rank``): only a variable
        assigned from an expression naming that index (``torch.device(f"cuda:{local_rank}")``)."""
        start = self.f.span(node)[0]
        fn = self._function_of(node)
        scope = fn if fn is not None and not isinstance(fn, ast.Lambda) else None
        body = scope.body if scope is not None else self.f.tree.body
        for name in _DEVICE_NAMES:
            if scope is not None and index is None and _device_param(scope, name):
                return name
            key = (id(body), name)
            if key not in self._assigned:
                self._assigned[key] = list(_assignments(body, name))
            for stmt in self._assigned[key]:
                if self.f.span(stmt)[1] <= start and _devicish(stmt.value, self.own):
                    if scope is None and self._function_of(node) is not None:
                        break
                    if index is not None and not re.search(
                        rf"(?<![\w.]){re.escape(index)}(?!\w)", self.f.source(stmt.value)
                    ):
                        continue
                    if not self._bound_at(body, name, start):
                        break
                    return name
        if index is not None:
            return None
        if scope is not None and scope.args.args and scope.args.args[0].arg == "self":
            cls = self._function_of(scope)
            owner = self.f.parent(scope)
            if cls is None and isinstance(owner, ast.ClassDef):
                for attr in ("device", "_device"):
                    if _self_device(owner, attr, self.own) and scope.name != "__init__":
                        return f"self.{attr}"
        return None

    def local_device_object(self, node) -> str | None:
        """The local ``device`` variable at ``node`` when every assignment of it before
        ``node`` makes a ``torch.device`` (``torch.device(...)``, ``x.device``), so
        ``device.type`` is its type; None for a parameter or a string variable."""
        name = self.local_device(node)
        if name is None or "." in name:
            return None
        fn = self._function_of(node)
        scope = fn if fn is not None and not isinstance(fn, ast.Lambda) else None
        if scope is not None and _device_param(scope, name):
            return None
        body = scope.body if scope is not None else self.f.tree.body
        start = self.f.span(node)[0]
        before = [s for s in self._assigned.get((id(body), name), []) if self.f.span(s)[1] <= start]
        return name if before and all(_makes_torch_device(s.value) for s in before) else None

    def _bound_at(self, body: list[ast.stmt], name: str, start: int) -> bool:
        """Is ``name`` bound on every path through ``body`` that reaches offset ``start``?
        (An assignment in one arm of an if/elif chain is not, in another arm or after the
        chain unless every arm binds it or leaves.)"""
        for stmt in body:
            first, last = self.f.span(stmt)
            if last <= start:
                if _binds([stmt], name):
                    return True
            elif first <= start:  # the statement holding ``start``: follow its block
                for block in _blocks(stmt):
                    if block and self.f.span(block[0])[0] <= start < self.f.span(block[-1])[1]:
                        return self._bound_at(block, name, start)
                return False
            else:
                break
        return False
