"""Kind ``qualified-name``: uses of named APIs (torch.cuda.X, apex.*, flash_attn.*, ...).

Rows give ``params.names`` (qualified name -> target or null; keys ending in ``.*`` match
everything below; a last segment ending in ``*``, ``torch._C._cuda*``, matches every name
it starts, and everything below those), optional ``notes`` and ``fixers``, and ``ignore``
(keys carved out of a wider one: ``deepspeed.ops.op_builder.cpu.*`` under
``deepspeed.ops.*``). Lookup is longest-first across all rules. Imports are rewritten in
import form (``torch.npu`` is spelled ``torch_npu.npu`` in import statements, so they work
whatever the import order); uses through ``import torch`` style bindings are rewritten in
place. A bare ``import msamp`` is a finding in every target when the module itself has no
NPU build (torch's own modules exist on every NPU host: their uses carry the findings).
``calls`` names whose calls are findings too where they were imported by name;
``imports_only`` rules report import statements, not uses; ``handled_by`` modules, imported
in a file, mean the rule's advice is taken there.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

from migrate.core.findings import Edit, fix_for
from migrate.core.kinds import Token, param, prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import NONE, mapping, one_of, strings
from migrate.core.targets import template
from migrate.scan.python.bindings import chain_parts
from migrate.scan.python.fixers import FIXERS
from migrate.scan.python.portable import chain_form
from migrate.scan.python.portable_imports import portable_import
from migrate.scan.python.portable_names import portable_use
from migrate.scan.python.prefilter import key_token, segment_counts
from migrate.scan.python.pyfile import PyFile


@dataclass(frozen=True)
class Entry:
    rule: Rule
    key: str
    target: str | None  # for prefix keys, without the trailing ".*"
    note: str
    fixer: str | None
    prefix: bool
    ignore: bool = False
    calls: bool = False  # its calls are reported where it was imported by name
    imports_only: bool = False  # the rule's import statements carry its findings, not uses


@dataclass(frozen=True)
class Match:
    entry: Entry
    qualname: str
    new_qualname: str | None


class Table:
    skip: frozenset[str] = frozenset()  # rule codes this file's imports handle (for_file)

    def __init__(self, rules: tuple[Rule, ...]):
        self.exact: dict[str, Entry] = {}
        self.prefix: dict[str, Entry] = {}
        # parent -> [(stem, entry)] for keys such as torch._C._cuda* (no target)
        self.stems: dict[str, list[tuple[str, Entry]]] = {}
        # Targets that are attributes of a class (torch.npu.mstx.mark): usable in code, not
        # importable with `from ... import` / `import ... as`.
        self.not_modules: set[str] = set()
        # rule code -> modules whose import in a file means its advice is taken there
        self.handled_by: dict[str, tuple[str, ...]] = {}
        for rule in rules:
            self.not_modules |= {import_form(m) for m in rule.params.get("not_modules") or ()}
            if rule.params.get("handled_by"):
                self.handled_by[rule.code] = tuple(rule.params["handled_by"])
            notes = rule.params.get("notes") or {}
            fixers = rule.params.get("fixers") or {}
            calls = set(rule.params.get("calls") or ())
            imports_only = bool(rule.params.get("imports_only"))
            for key, target in (rule.params.get("names") or {}).items():
                if key.endswith("*") and not key.endswith(".*"):
                    parent, _, stem = key[:-1].rpartition(".")
                    self.stems.setdefault(parent, []).append(
                        (stem, Entry(rule, key, None, str(notes.get(key, "")), None, True))
                    )
                    continue
                is_prefix = key.endswith(".*")
                base = key[:-2] if is_prefix else key
                if target and is_prefix:
                    target = target[:-2] if target.endswith(".*") else target
                entry = Entry(
                    rule,
                    base,
                    target,
                    str(notes.get(key, notes.get(base, ""))),
                    fixers.get(key) or fixers.get(base),
                    is_prefix,
                    calls=key in calls or base in calls,
                    imports_only=imports_only,
                )
                (self.prefix if is_prefix else self.exact)[base] = entry
            for key in rule.params.get("ignore") or ():  # carve-outs: not CUDA after all
                is_prefix = key.endswith(".*")
                base = key[:-2] if is_prefix else key
                (self.prefix if is_prefix else self.exact)[base] = Entry(
                    rule, base, None, "", None, is_prefix, ignore=True
                )

    def for_file(self, f: PyFile) -> Table:
        """This table, less the rules whose advice the file already took (``handled_by``:
        a file importing mindspeed runs megatron through it)."""
        skip = {code for code, mods in self.handled_by.items() if _imports_any(f, mods)}
        if not skip:
            return self
        view = copy.copy(self)
        view.skip = frozenset(skip)
        return view

    def lookup(self, qualname: str) -> Match | None:
        segs = qualname.split(".")
        n = len(segs)
        for i in range(n, 0, -1):
            key = ".".join(segs[:i])
            first, second = (self.exact, self.prefix) if i == n else (self.prefix, self.exact)
            entry = first.get(key) or second.get(key) or self._stem(segs, i)
            if entry is None:
                continue
            if entry.ignore or entry.rule.code in self.skip:
                return None
            new = None
            if entry.target is not None:
                new = ".".join([entry.target, *segs[i:]])
            return Match(entry, qualname, new)
        return None

    def _stem(self, segs: list[str], i: int) -> Entry | None:
        if not self.stems:
            return None
        for stem, entry in self.stems.get(".".join(segs[: i - 1]), ()):
            if segs[i - 1].startswith(stem):
                return entry
        return None

    def importable(self, qualname: str) -> bool:
        """Can an import statement name ``qualname`` (import form)?"""
        return not any(qualname == m or qualname.startswith(m + ".") for m in self.not_modules)


def _imports_any(f: PyFile, modules: tuple[str, ...]) -> bool:
    for node in f.imports:
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        if any(n == m or n.startswith(m + ".") for n in names for m in modules):
            return True
    return False


def import_form(qualname: str) -> str:
    """torch.npu[.x] is registered at run time; import statements use torch_npu.npu."""
    if qualname == "torch.npu" or qualname.startswith("torch.npu."):
        return "torch_npu" + qualname[len("torch") :]
    return qualname


# torch_npu runs on torch itself: its modules import on an NPU host (torch.cuda included).
_ON_EVERY_HOST = frozenset({"torch"})


def _values(m: Match) -> dict:
    return {"name": m.qualname, "target": m.new_qualname or "", "note": m.entry.note}


PARAMS = {
    "names": mapping(param(str, NONE), required=True, doc="qualified name (or prefix.*) -> replacement"),
    "fixers": mapping(param(str), doc="qualified name -> fixer (scan/python/fixers) for its calls"),
    "notes": mapping(param(str), doc="qualified name -> note shown in the message"),
    "fields": mapping(
        strings(), doc="qualified name -> the fields its NPU counterpart's result has (a copy may read them)"
    ),
    "ignore": strings(doc="qualified names a prefix row must not catch"),
    "not_modules": strings(doc="names that are attributes, not importable modules"),
    "calls": strings(
        doc="keys of names whose calls are reported too where the name was imported by name "
        "(`cfg = BitsAndBytesConfig(...)` after `from transformers import BitsAndBytesConfig`)"
    ),
    "imports_only": param(bool, doc="report import statements only, not each use (a project-wide choice)"),
    "handled_by": strings(doc="modules whose import in a file means the rule's advice is taken there"),
}


def _version(value: str) -> str | None:
    return None if re.fullmatch(r"\d+\.\d+", value) else f"{value!r} is not a MAJOR.MINOR version"


PORTABLE = {
    "names": mapping(
        param(
            str,
            dict,
            check=lambda v: template(v) if isinstance(v, str) else None,
            fields={
                "call": param(str, required=True, doc="the generic call"),
                "device_arg": param(str, check=template, doc="the device type it is given first"),
                "device_keyword": param(str, doc="... or the keyword it is given by (device_type)"),
                "device_keyword_value": param(str, check=template, doc="what that keyword is given"),
                "keywords": strings(doc="the original's positional parameters, passed on by keyword"),
                "min_torch": param(str, check=_version, doc="the oldest torch with the call"),
            },
        ),
        doc="qualified name -> its generic spelling, an expression, or a call",
    ),
    "default": param(
        str,
        check=one_of("branch", "module"),
        doc="branch: names without an entry get an NPU arm beside the CUDA one; "
        "module: torch.cuda[.rest] becomes the device module helper's [.rest]",
    ),
}


def refs(rule: Rule) -> str | None:
    """Fixers, notes and portable forms name keys of ``names``; fixers are registered."""
    names = rule.params.get("names") or {}
    for key, fixer_name in (rule.params.get("fixers") or {}).items():
        if key not in names:
            return f"params key 'fixers' [{key!r}]: params.names has no {key!r}"
        if fixer_name not in FIXERS:
            return (
                f"params key 'fixers' [{key!r}]: no fixer {fixer_name!r} is registered "
                f"(known: {', '.join(sorted(FIXERS))})"
            )
    for what in ("notes", "calls", "fields"):
        for key in rule.params.get(what) or ():
            if key not in names:
                return f"params key {what!r} [{key!r}]: params.names has no {key!r}"
    for key in rule.portable.get("names") or {}:
        base = key.removesuffix(".*")
        if not {key, base, base + ".*"} & set(names):
            return f"portable key 'names' [{key!r}]: params.names has no {key!r}"
    return None


def _tokens(rule: Rule, rules) -> set[Token]:
    """``params.prefilter`` words if given, else one segment of every key."""
    explicit = prefilter_words(rule)
    if explicit:
        return explicit
    counts = segment_counts(tuple(rules))
    return {key_token(k, counts) for k in rule.params.get("names") or {}}


@rule_kind(
    "qualified-name",
    engine="python",
    params=PARAMS,
    tokens=_tokens,
    compile=Table,
    portable=PORTABLE,
    refs=refs,
    reads="code",
)
def run(f: PyFile, table: Table) -> None:
    table = table.for_file(f)
    rewritten = _imports(f, table)
    for node in f.nodes(ast.Attribute, ast.Name):
        if isinstance(node.ctx, (ast.Load, ast.Store)):
            parent = f.parent(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # not the outermost link of its chain
            _use(f, table, node, parent, rewritten)


def _use(f: PyFile, table: Table, node: ast.AST, parent, rewritten: set[str]) -> None:
    parts = chain_parts(node)
    if not parts:
        return
    binding = f.bindings.names.get(parts[0])
    if binding is None:
        return
    m = table.lookup(".".join([binding.qualname, *parts[1:]]))
    if m is None or m.entry.imports_only:
        return
    is_call = isinstance(parent, ast.Call) and parent.func is node
    if is_call and m.entry.calls and isinstance(node, ast.Name) and binding.local != binding.qualname:
        f.report_node(m.entry.rule, node, _values(m), None)  # the import and each call
        return
    if f.target == "portable":
        if m.entry.fixer:  # flash_attn, xformers, apex: NPU-only kernels, no portable form
            if is_call or not isinstance(node, ast.Name):
                f.report_node(m.entry.rule, node, _values(m), None)
            return
        if isinstance(node, ast.Name) and binding.local != binding.qualname:
            return  # a name bound by `from torch.cuda import x`: the import is reported
        f.report_node(m.entry.rule, node, _values(m), portable_use(f, m, node, parts, parent, _values(m)))
        return
    if m.entry.fixer:
        if not is_call:
            if isinstance(node, ast.Name):
                return  # a bare reference to an imported name: the import is reported
            f.report_node(m.entry.rule, node, _values(m), None)
            return
        f.report_node(m.entry.rule, node, _values(m), _fixer_fix(f, m, parent))
        return
    if binding.local in rewritten or (
        isinstance(node, ast.Name) and not binding.dotted_module and binding.local != binding.qualname
    ):
        return  # the import statement carries the finding (and the fix)
    fix = None
    if m.new_qualname is not None:
        fix = _rename_use(f, m, node, parts)
    f.report_node(m.entry.rule, node, _values(m), fix)


def _fixer_fix(f: PyFile, m: Match, call: ast.Call):
    """The rule's fix from what the row's fixer proposes (None: the fixer declines)."""
    draft = FIXERS[m.entry.fixer or ""](f.fix_context(m.qualname, m.new_qualname), call)
    if draft is None:
        return None
    return fix_for(m.entry.rule, draft.edits, _values(m), draft.imports, description=draft.description)


def _rename_use(f: PyFile, m: Match, node: ast.AST, parts: list[str]):
    start, end = f.span(node)
    if f.text[start:end] != ".".join(parts):
        return None  # comments or line breaks inside the chain: leave it to a person
    assert m.new_qualname is not None  # only renames reach here
    new = chain_form(f, m.new_qualname)
    local = f.bindings.local_for(new)
    imports: list[str] = []
    if local is None:
        local = new
        imports.append(f"import {new.split('.')[0]}")
    return fix_for(m.entry.rule, [Edit(start, end, local)], _values(m), imports)


def _imports(f: PyFile, table: Table) -> set[str]:
    """Report and fix import statements; return local names whose import gets rewritten."""
    rewritten: set[str] = set()
    if f.target == "portable":  # CUDA-only imports stay; their uses get the portable fixes
        _report_imports(f, table)
        return rewritten
    for node in f.imports:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            rewritten |= _import_from(f, table, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _import_alias(f, table, node, alias):  # only `import x as y` is rewritten
                    rewritten.add(alias.asname or alias.name)
    return rewritten


def _report_imports(f: PyFile, table: Table) -> None:
    """Portable: `from torch.cuda.amp import autocast` has no generic import form; its uses
    may have, and then one fix ports them all and drops the name (portable_imports.py)."""
    for node in f.imports:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                m = table.lookup(f"{node.module}.{alias.name}") if alias.name != "*" else None
                if m is not None:
                    fix = None if m.entry.fixer else portable_import(f, m, node, alias, _values(m))
                    f.report_node(m.entry.rule, alias, _values(m), fix)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                m = table.lookup(alias.name)
                if m is not None and (alias.asname or _crashes(alias.name, m)):
                    f.report_node(m.entry.rule, alias, _values(m), None)


def _crashes(module: str, m: Match) -> bool:
    """Is `import module` itself the CUDA-only use? A library with no NPU build (msamp,
    apex, flash_attn) fails on import; torch's own modules (`import torch.cuda.amp`) exist on
    every NPU host, and their uses carry the findings and fixes."""
    return m.new_qualname is None and module.split(".")[0] not in _ON_EVERY_HOST


def _import_alias(f: PyFile, table: Table, node: ast.Import, alias: ast.alias) -> bool:
    m = table.lookup(alias.name)
    if m is None:
        return False
    if alias.asname is None and "." in alias.name and m.new_qualname is not None:
        return False  # `import torch.cuda.amp` binds `torch`: harmless, uses are fixed
    fix = None
    if (
        alias.asname
        and m.new_qualname
        and not m.entry.fixer
        and table.importable(import_form(m.new_qualname))
    ):
        start, end = f.span(alias)
        fix = fix_for(
            m.entry.rule, [Edit(start, end, f"{import_form(m.new_qualname)} as {alias.asname}")], _values(m)
        )
    f.report_node(m.entry.rule, alias, _values(m), fix)
    return fix is not None


def _import_from(f: PyFile, table: Table, node: ast.ImportFrom) -> set[str]:
    groups: list[tuple[str, list[str]]] = []
    matched: list[tuple[ast.alias, Match]] = []
    for alias in node.names:
        qual = f"{node.module}.{alias.name}"
        m = table.lookup(qual) if alias.name != "*" else None
        module, name = node.module or "", alias.name
        if m is not None:
            matched.append((alias, m))
            if m.new_qualname is not None and not m.entry.fixer:
                module, _, name = import_form(m.new_qualname).rpartition(".")
        local = alias.asname or alias.name
        text = name if (alias.asname is None and name == alias.name) else f"{name} as {local}"
        if groups and groups[-1][0] == module:
            groups[-1][1].append(text)
        else:
            groups.append((module, [text]))
    if not matched:
        return set()
    edits = (
        _regenerate(f, node, groups)
        if all(
            m.new_qualname is not None
            and not m.entry.fixer
            and table.importable(import_form(m.new_qualname).rpartition(".")[0])
            for _, m in matched
        )
        else None
    )
    rewritten = set()
    for alias, m in matched:
        fix = None
        if edits is not None:  # every alias of the statement carries the same edit
            fix = fix_for(m.entry.rule, list(edits), _values(m))
            rewritten.add(alias.asname or alias.name)
        f.report_node(m.entry.rule, alias, _values(m), fix)
    return rewritten


def _regenerate(f: PyFile, node: ast.ImportFrom, groups) -> list[Edit] | None:
    start, end = f.span(node)
    src = f.text[start:end]
    if "#" in src or "\\" in src:
        return None
    line_start = f.index.offset(node.lineno, 0)
    indent = f.text[line_start:start]
    if indent.strip():
        return None  # `x = 1; from a import b`: keep it simple, leave it to a person
    newline = "\r\n" if f.text[end : end + 2] == "\r\n" else "\n"
    stmts = [f"from {mod} import {', '.join(names)}" for mod, names in groups]
    return [Edit(start, end, (newline + indent).join(stmts))]
