"""Scan one Python file's text with the selected rules."""

from __future__ import annotations

import warnings

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.kinds import kinds_of
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.project import FileDevices
from migrate.scan.python.prefilter import python_hit_pattern
from migrate.scan.python.pyfile import PyFile
from migrate.scan.suppress import drop_suppressed


class ParseError(Exception):
    pass


def parse_python(text: str, rel: str, hit=None) -> PyFile:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on invalid escapes etc.
            return PyFile.parse(text, rel, hit)
    except SyntaxError as exc:
        hint = ""
        if exc.msg and ("print" in exc.msg or "Missing parentheses" in exc.msg):
            hint = " (Python 2 code?)"
        raise ParseError(f"syntax error at line {exc.lineno}: {exc.msg}{hint}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"cannot parse: {type(exc).__name__}: {exc}") from None


def scan_python(text: str, rel: str, rules: list[Rule] | tuple[Rule, ...],
                target: str = DEFAULT_TARGET, devices: FileDevices | None = None) -> list[Finding]:
    f = parse_python(text, rel, python_hit_pattern(tuple(rules)))
    f.target = target
    f.file_devices = devices
    for spec in kinds_of("python"):
        group = [r for r in rules if r.kind == spec.name and "python" in r.files]
        if group:
            spec.run(f, group)
    kept = drop_own_helpers(f, drop_suppressed(f.findings, f.index))
    settle_target(f, kept, rules, target)
    return sorted(kept, key=Finding.sort_key)


def drop_own_helpers(f: PyFile, findings: list[Finding]) -> list[Finding]:
    """The device helpers a port adds (migrate/core/device_helpers) name CUDA on purpose, as
    the fallback: they are the tool's own output, not findings."""
    import ast

    if not findings or "def get_" not in f.text:
        return findings
    spans = [f.span(n) for n in f.tree.body
             if isinstance(n, ast.FunctionDef) and (found := f.devices.own.get(n.name)) is not None
             and found.ours]
    if not spans:
        return findings
    return [x for x in findings
            if not any(a <= f.index.offset(x.line, x.column - 1) < b for a, b in spans)]


def env_vars_beside(f: PyFile, findings: list[Finding], codes: set[str]) -> None:
    """Portable: CUDA_VISIBLE_DEVICES keeps meaning something on CUDA hosts. In a list of
    names the Ascend one is added beside it; elsewhere the fix is left to a person."""
    import ast

    from migrate.core.findings import Edit

    consts = {f.span(n): n for n in f.nodes(ast.Constant) if isinstance(n.value, str)}
    for x in findings:
        if x.rule not in codes or x.fix is None or len(x.fix.edits) != 1:
            continue
        start = f.index.offset(x.line, x.column - 1)
        node = next((n for (a, b), n in consts.items() if a <= start < b), None)
        parent = f.parent(node) if node is not None else None
        new = x.fix.edits[0].content
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set)) and any(
                isinstance(e, ast.Constant) and e.value == new for e in parent.elts):
            x.fix, x.npu_aware, x.category = None, True, "auto"
            x.message += f" ({new} is already beside it: left as is)"
        elif isinstance(parent, (ast.List, ast.Tuple, ast.Set)) and new.isidentifier():
            a, b = f.span(node)
            q = f.text[a:b][-1]
            end = f.span(parent.elts[-1])[1]
            x.fix.edits = [Edit(end, end, f", {q}{new}{q}")]
            x.fix.description = f"Portable: add {q}{new}{q} beside it"
        else:
            x.fix, x.category = None, "manual"
            x.message += f" (portable: keep it for CUDA hosts and set {new} beside it)"


def settle_target(f: PyFile, findings: list[Finding], rules, target: str) -> None:
    """What every target shares after matching: NPU-aware code is left alone, transfer
    leaves what it patches, no statement is left half ported."""
    from migrate.scan.python import awareness, consistency, transfer

    generic = frozenset(r.code for r in rules if r.portable)
    awareness.mark(f, findings, portable=target == "portable", generic=generic)
    if target == "portable":
        env_vars_beside(f, findings, {r.code for r in rules if r.kind == "env-var"})
    if target == "transfer":
        transfer.settle(f, findings, {r.code: r for r in rules})
    consistency.settle(f, findings)
    if target == "portable":
        define_helpers(f, findings)
    for x in findings:
        x.target = target


def define_helpers(f: PyFile, findings: list[Finding]) -> None:
    """A script gets the port's helpers defined once, after its imports: every fix that
    calls one carries the same insertion (apply makes it once)."""
    import re

    planned = f.devices.planned if f._devices is not None else set()
    if not planned:
        return
    calls = re.compile(r"\b(" + "|".join(sorted(planned)) + r")\(")
    users = [(x, set(calls.findall("".join(e.content for e in x.fix.edits))))
             for x in findings if x.fix is not None]
    users = [(x, names) for x, names in users if names]
    from migrate.scan.python.device_names import Unspellable

    first = min((e.start for x, _ in users for e in x.fix.edits), default=None)
    try:
        edit = f.devices.definitions_edit(set().union(*(names for _, names in users)) if users
                                          else set(), first)
    except Unspellable as exc:
        for x, _ in users:
            x.fix, x.category = None, "manual"
            x.message += f" (portable: {exc})"
        return
    if edit is None:
        return
    for x, _ in users:
        x.fix.edits.append(edit)
        x.fix.imports = [i for i in x.fix.imports if i != "import torch" or
                         f.bindings.local_for("torch") is not None]
        x.fix.locate(f.index)
