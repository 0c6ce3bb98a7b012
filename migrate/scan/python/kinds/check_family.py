"""Kind ``device-check-family``: the project's family of device checks gains its NPU member.

In the module defining the family (migrate/scan/check_family.py: ``is_cuda_available``,
``is_mlu_available`` ... side by side), the NPU's is added after the CUDA one (else after
the last other vendor's), as the port's one-function check named as its siblings are; in a
package's ``__init__.py`` that re-exports the family (FileDevices.family), it joins the
import of its sibling and ``__all__``. Files that import from there then test with it
(migrate/scan/python/npu_checks.py ``family_check``). ``--target portable`` only: the other
targets write the NPU's API without asking.
"""

from __future__ import annotations

import ast
import re

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, fix_for
from migrate.core.import_names import name_added
from migrate.core.kinds import Token, rule_kind
from migrate.core.rules import Rule
from migrate.scan.check_family import (
    FAMILY_KIND,
    anchor,
    is_family,
    member_source,
    members_in_tree,
    npu_member,
    npu_name,
    reexports,
)
from migrate.scan.device_types import device_types
from migrate.scan.python.dunder_all import listed
from migrate.scan.python.npu_arm import arm_fix, device_arm
from migrate.scan.python.npu_checks import (
    asks_family_cuda,
    family_attribute_check,
    family_check,
    family_cuda_members,
)
from migrate.scan.python.pyfile import PyFile

_TEMPLATE_INDENT = "    "  # a level of the port's sources (migrate/core/device_helpers)
_LEVELS = re.compile(f"(?:{_TEMPLATE_INDENT})*")
# comment lines indented under a function's last line (blank lines between them too)
_TRAILING_COMMENTS = re.compile(r"(?:(?:\r?\n[ \t]*)*\r?\n[ \t]+#[^\r\n]*)*")


def _tokens(rule: Rule, rules=()) -> set[Token]:
    """A family names another vendor's member (``mlu_available``), where it is defined
    and where it is re-exported."""
    words = [f"{vendor}_available" for vendor in device_types().vendors] + ["is_cuda_available"]
    return {Token(word, context="code") for word in words}


@rule_kind(FAMILY_KIND, engine="python", params={}, tokens=_tokens, targets=("portable",))
def run(f: PyFile, rules: list[Rule]) -> None:
    if f.target != "portable":
        return
    for rule in rules:
        _member(f, rule)
        _chains(f, rule)
        _exports(f, rule)


def _member(f: PyFile, rule: Rule) -> None:
    """The defining module: the NPU member after its anchor."""
    members = members_in_tree(f.tree)
    if not is_family(members) or npu_member(members) is not None:
        return
    name, after = npu_name(members), anchor(members)
    # the last definition (after an overload's stubs, a redefinition)
    node = [n for n in f.tree.body if isinstance(n, ast.FunctionDef) and n.name == after][-1]
    # torch bound by a plain module-level import, else (optional, or imported only inside
    # functions: trl's import_utils) the member imports it itself
    plain = f.devices.torch_binding == "plain"
    source = member_source(name, (f.bindings.local_for("torch") or "torch") if plain else None)
    source = _reindented(source, _indent_unit(f, node))
    nl = newline_of(f.text)
    end = _line_end(f.text, f.span(node)[1])  # after a comment closing the anchor's last line
    below = _TRAILING_COMMENTS.match(f.text, end)  # and the anchor's own comments below it
    end = below.end() if below else end
    edit = Edit(end, end, nl * 3 + source.replace("\n", nl) + _spacing_after(f.text, end, nl))
    values = {"name": name, "anchor": after}
    # a module listing its names in __all__ (a star import re-exports only those) lists it too
    edits = [edit, *listed(f, after, name)]
    fix = fix_for(rule, edits, values, description=f"add `{name}()` after `{after}()`")
    start = f.index.offset(node.lineno, node.col_offset)
    f.report(rule, start, start + len("def ") + len(after), values, fix)


def _indent_unit(f: PyFile, anchor_def: ast.FunctionDef) -> str:
    """The indentation of the module's function bodies (a tab, two spaces): the anchor's,
    else the first top-level function's whose body starts on a line of its own; four
    spaces where none does."""
    defs = [n for n in f.tree.body if isinstance(n, ast.FunctionDef)]
    for node in [anchor_def, *defs]:
        first = node.body[0]
        start = f.index.offset(first.lineno, 0)
        indent = f.text[start : f.index.offset(first.lineno, first.col_offset)]
        if first.lineno > node.lineno and indent and not indent.strip(" \t"):
            return indent
    return _TEMPLATE_INDENT


def _reindented(source: str, unit: str) -> str:
    """``source`` (indented by four spaces a level) indented by ``unit`` a level."""
    if unit == _TEMPLATE_INDENT:
        return source
    out = []
    for line in source.split("\n"):
        lead = _LEVELS.match(line)
        levels = len(lead.group()) // len(_TEMPLATE_INDENT) if lead else 0
        out.append(unit * levels + line[levels * len(_TEMPLATE_INDENT) :])
    return "\n".join(out)


def _spacing_after(text: str, at: int, nl: str) -> str:
    """The line breaks that leave two blank lines between the member (ending at ``at``)
    and the statement or comment after it (``X = 2`` right below the anchor)."""
    rest = text[at:].split("\n")[1:]
    blank = next((i for i, line in enumerate(rest) if line.strip()), None)
    return "" if blank is None else nl * max(0, 2 - blank)


def _line_end(text: str, at: int) -> int:
    """The end of the line holding offset ``at`` (before its line break)."""
    end = text.find("\n", at)
    if end < 0:
        return len(text)
    return end - 1 if end > at and text[end - 1] == "\r" else end


def _chains(f: PyFile, rule: Rule) -> None:
    """A device chain asking the family's CUDA member gains an NPU arm asking the NPU's
    (mmengine's ``get_device``: ``elif is_npu_available(): return 'npu'``), as a chain
    asking ``torch.cuda.is_available()`` does (scan/python/npu_arm.py, which gives the
    arm's other findings this one insertion): without it the code picks the CPU on an NPU
    host. In the defining module, and in a file importing the CUDA member from there."""
    if not family_cuda_members(f):
        return
    family = family_check(f)
    name = family[0] if family is not None else ""
    for node in f.nodes(ast.If):
        stmt = device_arm(f, node, asks_family_cuda)
        if stmt is None:
            continue
        through = family_attribute_check(f, node.test)
        values = {"name": through or name, "anchor": f.source(node.test)[:-2]}
        fix = arm_fix(f, node, stmt, fix_for(rule, [], values))
        if fix is not None:
            f.report(rule, *f.span(node.test), values, fix.locate(f.index))


def _exports(f: PyFile, rule: Rule) -> None:
    """A package re-exporting the family: the NPU member beside its anchor, in each import
    of it (project/family.py ``_exporters`` takes the package for one exporting it: the
    files importing from there import the member too)."""
    fd = f.file_devices
    family = fd.family if fd is not None else None
    own = fd.module if fd is not None else None
    if family is None or family.defined or not f.rel.endswith("__init__.py") or own not in family.publics:
        return
    sources = {family.module, *(p for p in family.publics if p.startswith(f"{own}."))}
    if reexports(f.tree, own or "", sources, family.name):
        return  # exported already (a statement of its own, after a backslash's)
    stmts = reexports(f.tree, own or "", sources, family.anchor)
    edits = [e for stmt in stmts if (e := _added(f, stmt, family.name)) is not None]
    if not edits:
        return
    edits += listed(f, family.anchor, family.name)
    values = {"name": family.name, "anchor": family.anchor}
    fix = fix_for(rule, edits, values, description=f"export `{family.name}` beside `{family.anchor}`")
    f.report(rule, *f.span(stmts[0]), values, fix)


def _added(f: PyFile, stmt: ast.ImportFrom, name: str) -> Edit | None:
    """``name`` added to the import ``stmt`` in its shape, else (a backslash, a ``;``, a
    wrapped line that would overflow) imported by a statement of its own after it."""
    if any((a.asname or a.name) == name for a in stmt.names):
        return None
    edit = name_added(f.text, f.index, stmt, name)
    if edit is not None:
        return edit
    start = f.index.offset(stmt.lineno, 0)
    indent = f.text[start : f.index.offset(stmt.lineno, stmt.col_offset)]
    if indent.strip():
        return None  # after a `:` or a `;` on its line
    end = _line_end(f.text, f.span(stmt)[1])
    source = f"from {'.' * stmt.level}{stmt.module or ''} import {name}"
    return Edit(end, end, newline_of(f.text) + indent + source)
