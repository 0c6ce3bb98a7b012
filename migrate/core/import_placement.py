"""Add the imports that fixed code needs: each statement once, next to ``import torch``.

A statement ``import M`` counts as present when the module imports M in any form
(``import M``, ``import M as x``, ``from M import y``, ``import M.sub``) at module level,
including inside a top-level ``try``/``if`` block — unless the new code names ``M``
(``M.x``, ``getattr(M, ...)``) and no module-level name ``M`` is bound, in which case the
binding is added.
``from M import n`` is present when ``n`` is imported from M (or ``*``).

Placement: the line after the first top-level ``import torch...``/``from torch...``
statement (after the ``import torch.x`` lines that directly follow it, as isort orders
them); else after the module docstring and ``__future__`` imports; else before the
first statement (so shebang, coding cookie and licence header stay on top). Imports of
the project's own modules go where isort puts them: among the file's imports of that
package (relative ones among its relative imports, furthest first), else in a section of
their own (a blank line apart) after the third-party imports and before the relative ones.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, LineIndex
from migrate.core.import_names import isort_key, name_added
from migrate.core.library_place import library_anchor


@dataclass
class ModuleImports:
    modules: set[str] = field(default_factory=set)  # every module imported, any form
    bound: set[str] = field(default_factory=set)  # module-level names bound by imports
    from_names: dict[str, set[str]] = field(default_factory=dict)  # module -> names


def _toplevel(body: list[ast.stmt]):
    """Module-level statements, descending into top-level try/if/with blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.Try | ast.If | ast.With):
            yield from _toplevel(node.body)
            yield from _toplevel(getattr(node, "orelse", []))
            yield from _toplevel(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _toplevel(handler.body)


def module_imports(tree: ast.Module) -> ModuleImports:
    out = ModuleImports()
    for node in _toplevel(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                out.modules.update(".".join(parts[: i + 1]) for i in range(len(parts)))
                out.bound.add(alias.asname or parts[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            parts = node.module.split(".")
            out.modules.update(".".join(parts[: i + 1]) for i in range(len(parts)))
            names = out.from_names.setdefault(node.module, set())
            for alias in node.names:
                names.add(alias.name)
                out.bound.add(alias.asname or alias.name)
    return out


def _missing(statement: str, have: ModuleImports, new_code: str) -> bool:
    node = ast.parse(statement).body[0]
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            if alias.name not in have.modules:
                return True
            if alias.asname and alias.asname not in have.bound:
                return True
            named = re.search(rf"(?<![\w.]){re.escape(name)}(?:\.|\b(?!\s*=))", new_code)
            if named and name not in have.bound:
                return True
        return False
    if isinstance(node, ast.ImportFrom):
        names = have.from_names.get(node.module or "", set())
        return any(a.name not in names and "*" not in names for a in node.names)
    raise ValueError(f"not an import statement: {statement!r}")


def _is_torch_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        mod = node.module or ""
        return not node.level and (mod == "torch" or mod.startswith("torch."))
    return False


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def guarded_torch_import(tree: ast.Module) -> ast.stmt | None:
    """The `import torch` inside a top-level `try:` that comes before any plain one."""
    for node in tree.body:
        if _is_torch_import(node):
            return None
        if isinstance(node, ast.Try):
            for inner in node.body:
                if _is_torch_import(inner):
                    return inner
    return None


def _anchor(tree: ast.Module) -> tuple[int | None, int | None]:
    """(line after which to insert, or None) / (line before which to insert, or None)."""
    guarded = guarded_torch_import(tree)
    if guarded is not None:  # `try: import torch`: new imports go inside the guard
        return guarded.end_lineno, None
    for i, node in enumerate(tree.body):
        if _is_torch_import(node):
            # isort order: stay with the `import torch...` lines that follow directly.
            while (
                i + 1 < len(tree.body)
                and isinstance(node, ast.Import)
                and isinstance(tree.body[i + 1], ast.Import)
                and _is_torch_import(tree.body[i + 1])
            ):
                i += 1
                node = tree.body[i]
            return node.end_lineno, None
    after = None
    for i, node in enumerate(tree.body):
        if (i == 0 and _is_docstring(node)) or (
            isinstance(node, ast.ImportFrom) and node.module == "__future__"
        ):
            after = node.end_lineno
        else:
            break
    if after is not None:
        return after, None
    if tree.body:
        first = tree.body[0]
        decorators = getattr(first, "decorator_list", [])
        return None, min([first.lineno] + [d.lineno for d in decorators])
    return None, None


def anchor_offset(text: str, tree: ast.Module) -> int:
    """Where a new top-level import goes (see the module docstring)."""
    index = LineIndex(text)
    after, before = _anchor(tree)
    if after is not None:
        return index.starts[after] if after < len(index.starts) else len(text)
    if before is not None:
        return index.starts[before - 1]
    return len(text)


def _shared_line_end(tree: ast.Module, line: int, index: LineIndex) -> int | None:
    """If the anchor statement ending on ``line`` is followed by another statement on that
    same line, the offset where the anchor stops (inserting after the line would put the
    import after code that needs it); else None."""
    body = tree.body
    for i in range(len(body) - 1, -1, -1):
        node = body[i]
        if node.end_lineno != line or not (
            _is_torch_import(node)
            or _is_docstring(node)
            or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        ):
            continue
        if i + 1 < len(body) and body[i + 1].lineno == line:
            return index.offset_of_node(line, node.end_col_offset or 0)
        return None
    return None


_FROM = re.compile(r"from ([\w.]+) import ([\w, ]+)")


def _merged(wanted: list[str]) -> list[str]:
    """``from M import a`` and ``from M import b`` -> ``from M import a, b`` (first place)."""
    out: list[str] = []
    by_module: dict[str, int] = {}
    for stmt in wanted:
        m = _FROM.fullmatch(stmt)
        if m and m.group(1) in by_module:
            i = by_module[m.group(1)]
            prev = _FROM.fullmatch(out[i])
            assert prev is not None  # out[i] was added as a match
            names = [n.strip() for n in prev.group(2).split(",")]
            names += [n.strip() for n in m.group(2).split(",") if n.strip() not in names]
            out[i] = f"from {m.group(1)} import {', '.join(sorted(names))}"
            continue
        if m:
            by_module[m.group(1)] = len(out)
        out.append(stmt)
    return out


def extend_edits(text: str, tree: ast.Module, wanted: list[str]) -> tuple[list[Edit], list[str]]:
    """Names imported from a module the file already imports from at top level (spelled the
    same, relative or absolute) join that statement: on one plain line (``from M import a,
    b``), or a parenthesised list in its own shape (migrate/core/import_names.py):
    (edits, statements still to insert)."""
    edits: list[Edit] = []
    rest: list[str] = []
    index = LineIndex(text)
    for stmt in wanted:
        m = _FROM.fullmatch(stmt)
        node = _same_module(tree, m.group(1)) if m else None
        if node is None or m is None:
            rest.append(stmt)
            continue
        start, end = index.span(node)
        line = text[start:end]
        new_names = [n.strip() for n in m.group(2).split(",") if n.strip()]
        if node.lineno != node.end_lineno or "(" in line:
            added = [name_added(text, index, node, n) for n in new_names]
            if len(new_names) == 1 and added[0] is not None:
                edits.append(added[0])
            elif any((a.asname or a.name) not in new_names for a in node.names) or len(new_names) > 1:
                rest.append(stmt)
            continue
        if "\\" in line or ";" in line:
            rest.append(stmt)
            continue
        present = {a.asname or a.name for a in node.names}
        new = [n for n in new_names if n not in present]
        names = [a.name for a in node.names]
        if new and not any(a.asname for a in node.names) and names == sorted(names, key=isort_key):
            # a sorted list stays sorted, as isort / ruff's I001 keep it
            first = line.index(" import ") + len(" import ")
            merged = ", ".join(sorted(names + new, key=isort_key))
            if line[first:].rstrip() == ", ".join(names):
                edits.append(Edit(start + first, start + first + len(", ".join(names)), merged))
                continue
        if new:
            edits.append(Edit(end, end, "".join(f", {n}" for n in new)))
    return edits, rest


def _same_module(tree: ast.Module, module: str) -> ast.ImportFrom | None:
    """The file's first top-level ``from`` import of ``module`` as spelled (``..utils``)."""
    for n in tree.body:
        if (
            isinstance(n, ast.ImportFrom)
            and "." * n.level + (n.module or "") == module
            and all(a.name != "*" for a in n.names)
        ):
            return n
    return None


def import_edits(
    text: str,
    tree: ast.Module,
    statements: list[str],
    new_code: str = "",
    libraries: frozenset[str] = frozenset(),
) -> list[Edit]:
    """The edits that add the missing ``statements`` to ``text``: names joining a plain
    ``from M import ...`` line the file has; imports of the project's own modules after
    the file's last import of that package (else after its imports); of a third-party
    library in ``libraries`` that the file imports nothing of, among its third-party
    imports (migrate/core/library_place.py); the rest together after ``import torch``
    (see import_edit)."""
    have = module_imports(tree)
    wanted = [s.strip() for s in statements]
    wanted = [s for i, s in enumerate(wanted) if s not in wanted[:i] and _missing(s, have, new_code)]
    edits, rest = extend_edits(text, tree, _merged(wanted))
    index = LineIndex(text)
    placed: dict[int, list[str]] = {}
    torchish = []
    gap: set[int] = set()  # insertions that open the standard library's section
    sections: dict[int, str] = {}  # insertions that open a section: "before" / "after" a blank line
    for stmt in rest:
        m = _FROM.fullmatch(stmt)
        top = m.group(1).split(".")[0] if m else ""
        if m and top in _STDLIB and top != "__future__":
            std = _stdlib_anchor(tree)
            if std is not None and std[0] < len(index.starts):
                placed.setdefault(index.starts[std[0]], []).append(stmt)
                if std[1]:
                    gap.add(index.starts[std[0]])
                continue
        line, opens = _project_anchor(tree, top, m.group(1)) if m and top not in _TORCH_TOPS else (None, "")
        if m and top in libraries and not any(_top_of(n) == top for n in _leading_imports(tree)):
            line, opens = library_anchor(text, tree, m.group(1)), ""
        if line is None or line >= len(index.starts):
            torchish.append(stmt)
        else:
            placed.setdefault(index.starts[line], []).append(stmt)
            if opens:
                sections[index.starts[line]] = opens
    edit = import_edit(text, tree, torchish, new_code)
    nl = newline_of(text)
    for pos, stmts in placed.items():
        content = "".join(s + nl for s in stmts) + (nl if pos in gap else "")
        if sections.get(pos) == "before":
            content = nl + content
        elif sections.get(pos) == "after":
            content += nl
        if edit is not None and edit.start == pos and edit.end == pos and edit.content.endswith(nl):
            edit = Edit(pos, pos, edit.content + content)
        else:
            edits.append(Edit(pos, pos, content))
    return edits + ([edit] if edit else [])


_STDLIB = frozenset(sys.stdlib_module_names)
_TORCH_TOPS = frozenset({"torch", "torch_npu"})  # go with `import torch`; torchtune, torchvision do not


def _leading_imports(tree: ast.Module) -> list[ast.stmt]:
    """The module's import statements before its first other statement (a docstring
    aside)."""
    leading: list[ast.stmt] = []
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            leading.append(node)
        elif not (i == 0 and _is_docstring(node)):
            break
    return leading


def _stdlib_anchor(tree: ast.Module) -> tuple[int, bool] | None:
    """(line index, opens a section) where a standard-library import goes, as isort places
    it: after the last standard-library import among the file's leading imports, else
    before the first of them that is not ``__future__`` (then a blank line follows it);
    None where the file has no leading imports."""
    leading = _leading_imports(tree)
    std = [
        n
        for n in leading
        if _top_of(n) in _STDLIB and _top_of(n) != "__future__" and not getattr(n, "level", 0)
    ]
    if std:
        last = std[-1]
        if any(other is not last and other.lineno == last.end_lineno for other in tree.body):
            return None
        return last.end_lineno or last.lineno, False
    first = next((n for n in leading if _top_of(n) != "__future__"), None)
    if first is None or any(other is not first and other.end_lineno == first.lineno for other in tree.body):
        return None
    return first.lineno - 1, True


def _top_of(node: ast.stmt) -> str:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0]
    if isinstance(node, ast.Import):
        return node.names[0].name.split(".")[0]
    return ""


def _project_anchor(tree: ast.Module, top: str, module: str = "") -> tuple[int | None, str]:
    """(the line after which an import from ``module`` of the project's package ``top``
    goes, and whether it opens an isort section: "before" / "after" a blank line, or "").
    Where it sorts among the file's top-level ``from top...`` imports (relative ones: among
    the file's relative imports, furthest first, as ruff's isort orders them) when those are
    sorted, else after the last of them; without any, in a section of its own: the
    project's before the file's relative imports, either after the file's last leading
    import (each on its own line, outside any block); None where there is no import."""
    leading: list[ast.stmt] = []
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            leading.append(node)
        elif not ((i == 0 and _is_docstring(node)) or isinstance(node, (ast.Try, ast.If))):
            break
    if not leading:
        return None, ""
    relatives = [n for n in leading if getattr(n, "level", 0)]
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        new_key: tuple = (-level, module[level:].lower())
        same = relatives
        keys: list[tuple] = [
            (-getattr(n, "level", 0), (getattr(n, "module", None) or "").lower()) for n in same
        ]
    else:
        new_key = (0, module.lower())
        same = [n for n in leading if _top_of(n) == top and not getattr(n, "level", 0)]
        same = [n for n in same if isinstance(n, ast.ImportFrom)] or same
        keys = [(0, (getattr(n, "module", None) or "").lower()) for n in same]
    start = len(same) - 1  # the sorted run the block ends with (a block after an `if` sorts alone)
    while start > 0 and keys[start - 1] <= keys[start]:
        start -= 1
    if module and same and all(isinstance(n, ast.ImportFrom) for n in same):
        after = next((n for n, k in zip(same[start:], keys[start:]) if k > new_key), None)
        if after is not None and _line_before(tree, after) is not None:
            return _line_before(tree, after), ""
    if same:
        return _line_after(tree, same[-1]), ""
    if relatives and not module.startswith("."):
        return _line_before(tree, relatives[0]), "after"
    return _line_after(tree, leading[-1]), "before"


def _line_before(tree: ast.Module, node: ast.stmt) -> int | None:
    """The line an insertion before ``node`` goes after (None: ``node`` shares its line)."""
    if any(other is not node and other.end_lineno == node.lineno for other in tree.body):
        return None
    return node.lineno - 1


def _line_after(tree: ast.Module, node: ast.stmt) -> int | None:
    if any(other is not node and other.lineno == node.end_lineno for other in tree.body):
        return None
    return node.end_lineno


def _before_torch_submodules(tree: ast.Module) -> int | None:
    """The line index before the file's first torch import where that is not ``import
    torch`` itself (``import torch.x``, ``from torch.x import y``: isort puts ``import
    torch`` above both), else None."""
    if guarded_torch_import(tree) is not None:
        return None
    first = next((n for n in tree.body if _is_torch_import(n)), None)
    if first is None or (isinstance(first, ast.Import) and any(a.name == "torch" for a in first.names)):
        return None
    return _line_before(tree, first)


def _third_party_place(tree: ast.Module) -> tuple[int, bool] | None:
    """(line index, opens a section) where ``import torch`` goes in a file without a torch
    import, as isort sorts it: among the file's leading third-party imports (straight
    imports first, by name), else in a section of its own after the standard library's;
    None where the file has no leading imports or they share lines with other code."""
    leading = _leading_imports(tree)
    if not leading or any(n.lineno != n.end_lineno or _line_before(tree, n) is None for n in leading):
        return None
    if any(_is_torch_import(n) for n in _toplevel(tree.body)):
        return None
    third = [n for n in leading if _top_of(n) not in _STDLIB and not getattr(n, "level", 0)]
    for n in third:
        if isinstance(n, ast.ImportFrom) or _top_of(n).lower() > "torch":
            return n.lineno - 1, False
    if third:
        return third[-1].end_lineno or third[-1].lineno, False
    std = [n for n in leading if _top_of(n) in _STDLIB and _top_of(n) != "__future__"]
    if not std:
        return None
    return std[-1].end_lineno or std[-1].lineno, True


def import_edit(text: str, tree: ast.Module, statements: list[str], new_code: str = "") -> Edit | None:
    """The one insertion that adds the missing ``statements`` to ``text``, or None."""
    have = module_imports(tree)
    wanted: list[str] = []
    for stmt in statements:
        stmt = stmt.strip()
        if stmt not in wanted and _missing(stmt, have, new_code):
            wanted.append(stmt)
    wanted = _merged(wanted)
    if not wanted:
        return None
    nl = newline_of(text)
    index = LineIndex(text)
    ahead = _before_torch_submodules(tree) if wanted == ["import torch"] else None
    if ahead is not None:  # isort: `import torch` sorts before `import torch.distributed`
        return Edit(index.starts[ahead], index.starts[ahead], "import torch" + nl)
    section = _third_party_place(tree) if wanted == ["import torch"] else None
    if section is not None:  # isort: a third-party import, after the standard library's
        line, opens = section
        return Edit(index.starts[line], index.starts[line], (nl if opens else "") + "import torch" + nl)
    after, before = _anchor(tree)
    guarded = guarded_torch_import(tree)
    indent = " " * guarded.col_offset if guarded is not None else ""
    if after is not None:
        inline = _shared_line_end(tree, after, index)
        if inline is not None:  # `import torch; torch.npu.x()`: the import goes right here
            return Edit(inline, inline, "".join("; " + s for s in wanted))
        if after < len(index.starts):
            pos = index.starts[after]
            return Edit(pos, pos, "".join(indent + s + nl for s in wanted))
        # The anchor is the last line and it has no final newline: keep it missing.
        return Edit(len(text), len(text), "".join(nl + s for s in wanted))
    if before is not None:
        pos = index.starts[before - 1]
        return Edit(pos, pos, "".join(s + nl for s in wanted))
    pos = len(text)
    lead = nl if text and not text.endswith("\n") else ""
    return Edit(pos, pos, lead + "".join(s + nl for s in wanted))
