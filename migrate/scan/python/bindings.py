"""Import resolution: which qualified name a local name or attribute chain stands for.

We resolve imports ourselves from Import/ImportFrom nodes (libcst's QualifiedNameProvider
triples the cost of a parse). Scoping is flattened: a name imported anywhere in a module
counts everywhere in it, which is what migration code wants (imports inside functions and
``try: import flash_attn`` blocks are common).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.core.import_names import resolved_module


@dataclass
class Binding:
    local: str
    qualname: str
    node: ast.Import | ast.ImportFrom | ast.Assign
    alias: ast.alias | None
    # True for `import a.b.c` without `as` (binds `a`, imports a.b.c).
    dotted_module: bool = False


@dataclass
class Bindings:
    names: dict[str, Binding] = field(default_factory=dict)

    def local_for(self, qualname: str) -> str | None:
        """Shortest way to spell ``qualname`` with the module's bindings, or None."""
        best: Binding | None = None
        for b in self.names.values():
            if qualname == b.qualname or qualname.startswith(b.qualname + "."):
                if best is None or len(b.qualname) > len(best.qualname):
                    best = b
        if best is None:
            return None
        return best.local + qualname[len(best.qualname) :]

    def qualname_of(self, node: ast.AST) -> str | None:
        """The imported name an attribute chain stands for (th.cuda.x -> torch.cuda.x)."""
        parts = chain_parts(node)
        if not parts or parts[0] not in self.names:
            return None
        return ".".join([self.names[parts[0]].qualname, *parts[1:]])


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statement_index(tree: ast.AST) -> tuple[list[ast.Import | ast.ImportFrom], list[ast.AST]]:
    """(import statements, function and class definitions) at any depth, in source order,
    from one walk of the statements (expressions hold neither)."""
    imports: list[ast.Import | ast.ImportFrom] = []
    definitions: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        if isinstance(node, _DEFINITIONS):
            definitions.append(node)
        for name in _BODIES:
            children = getattr(node, name, None)
            if children:
                stack.extend(reversed(children))
    return imports, definitions


def collect_bindings(tree: ast.Module, imports: list[ast.Import | ast.ImportFrom] | None = None) -> Bindings:
    """The names the imports of ``tree`` bind (``imports``: statement_index's first list, if
    the caller has it)."""
    out = Bindings()
    for node in statement_index(tree)[0] if imports is None else imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out.names[alias.asname] = Binding(alias.asname, alias.name, node, alias)
                else:
                    head = alias.name.split(".")[0]
                    out.names.setdefault(
                        head, Binding(head, head, node, alias, dotted_module="." in alias.name)
                    )
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                continue  # relative imports name the project's own modules
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                out.names[local] = Binding(local, f"{node.module}.{alias.name}", node, alias)
    if out.names:
        _alias_assignments(tree, out)
    return out


def _alias_assignments(tree: ast.Module, out: Bindings) -> None:
    """Names bound to an imported API by assignment at module level, or in a function
    that declares them ``global``: ``global fa; fa = flash_attn.flash_attn_func`` makes
    later ``fa(q, k, v)`` calls uses of flash_attn.flash_attn_func."""
    stack: list[tuple[ast.AST, frozenset[str] | None]] = [(tree, None)]
    while stack:
        node, globals_ = stack.pop()
        for name in _BODIES:
            for child in getattr(node, name, None) or ():
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    stack.append((child, _declared_global(child)))
                elif isinstance(child, ast.ClassDef):
                    continue
                elif isinstance(child, ast.Assign):
                    _alias(child, globals_, out)
                else:
                    stack.append((child, globals_))


def _declared_global(fn: ast.AST) -> frozenset[str]:
    names: set[str] = set()
    stack = list(getattr(fn, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in _BODIES:
                stack.extend(getattr(node, name, None) or ())
    return frozenset(names)


def _alias(node: ast.Assign, globals_: frozenset[str] | None, out: Bindings) -> None:
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return
    local = node.targets[0].id
    if local in out.names or (globals_ is not None and local not in globals_):
        return
    parts = chain_parts(node.value)
    if not parts or parts[0] not in out.names or parts[0] == local:
        return
    qual = ".".join([out.names[parts[0]].qualname, *parts[1:]])
    out.names[local] = Binding(local, qual, node, None)


def chain_parts(node: ast.AST) -> list[str] | None:
    """['torch', 'cuda', 'synchronize'] for torch.cuda.synchronize; None if not a plain chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return parts


def relative_bindings(tree: ast.Module, module: str, is_package: bool) -> Bindings:
    """The names the module-level relative imports of ``tree`` bind, resolved against the
    dotted ``module`` the file is (``is_package``: it is a package's ``__init__.py``), so
    ``from .accelerator import get_accelerator`` in ``pkg/train.py`` binds
    ``pkg.accelerator.get_accelerator``. One reaching above the top package binds nothing."""
    out = Bindings()
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = resolved_module(node, module, is_package)
        if base is None:
            continue
        for alias in node.names:
            if alias.name != "*":
                local = alias.asname or alias.name
                out.names[local] = Binding(local, f"{base}.{alias.name}" if base else alias.name, node, alias)
    return out
