"""Scan one Python file's text with the selected rules."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from migrate.core.errors import too_deep
from migrate.core.findings import Finding
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.project import FileDevices
from migrate.scan.python.pyfile import PyFile
from migrate.scan.suppress import drop_suppressed, python_comments

if TYPE_CHECKING:  # the plan a RuleSet hands the engine (scan/ruleset.py imports this engine)
    from migrate.scan.ruleset import Plan


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
    except (RecursionError, MemoryError) as exc:
        raise ParseError(f"cannot parse: {too_deep(exc)}") from None
    except ValueError as exc:
        raise ParseError(f"cannot parse: {exc}") from None


def scan_python(
    text: str, rel: str, plan: Plan, target: str = DEFAULT_TARGET, devices: FileDevices | None = None
) -> list[Finding]:
    """Findings of ``plan`` (RuleSet.python(rel)) on one Python text, with fixes for
    ``target`` (portable fixes route through the ``devices`` of the project around it).
    Raises ParseError."""
    f = parse_python(text, rel, plan.hits)
    f.target = target
    f.file_devices = devices
    for spec, group in plan.groups:
        spec.run(f, group)
    kept = drop_own_helpers(f, drop_suppressed(f.findings, python_comments(text)))
    return sorted(settle_target(f, kept, plan.rules, target), key=Finding.sort_key)


def drop_own_helpers(f: PyFile, findings: list[Finding]) -> list[Finding]:
    """The device helpers a port adds (migrate/core/device_helpers) name CUDA on purpose, as
    the fallback: they are the tool's own output, not findings."""
    import ast

    if not findings or "def get_" not in f.text:
        return findings
    spans = [
        f.span(n)
        for n in f.tree.body
        if isinstance(n, ast.FunctionDef) and (found := f.devices.own.get(n.name)) is not None and found.ours
    ]
    if not spans:
        return findings
    return [x for x in findings if not any(a <= f.index.offset(x.line, x.column - 1) < b for a, b in spans)]


def settle_target(f: PyFile, findings: list[Finding], rules, target: str) -> list[Finding]:
    """What every target shares after matching: NPU-aware code is left alone, transfer
    leaves what it patches, no statement is left half ported. Each pass makes new findings."""
    from migrate.scan.check_family import FAMILY_KIND
    from migrate.scan.python import awareness, consistency, transfer

    by_code = {r.code: r for r in rules}
    generic = frozenset(r.code for r in rules if r.portable)
    additions = frozenset(r.code for r in rules if r.kind == FAMILY_KIND)
    findings = awareness.mark(
        f, findings, portable=target == "portable", generic=generic, additions=additions
    )
    if target == "portable":
        from migrate.scan.python.npu_arm import add_npu_arms
        from migrate.scan.python.npu_ternary_copy import add_npu_ternary_copies
        from migrate.scan.python.npu_work_arm import add_npu_work_arms
        from migrate.scan.python.portable_env import env_vars_beside

        findings = env_vars_beside(f, findings, by_code)
        findings = add_npu_arms(f, findings)
        findings = add_npu_ternary_copies(f, findings)
        findings = add_npu_work_arms(f, findings)
    if target == "transfer":
        findings = transfer.settle(f, findings, by_code)
    findings = consistency.settle(f, findings)
    if target == "portable":
        findings = define_helpers(f, findings)
    return findings


def define_helpers(f: PyFile, findings: list[Finding]) -> list[Finding]:
    """A script gets the port's helpers defined once, after its imports: every fix that
    calls one carries the same insertion (apply makes it once), and says so."""
    import re
    from dataclasses import replace

    from migrate.scan.python.device_names import Unspellable
    from migrate.scan.python.helper_definitions import definitions_edit

    planned = f.devices.planned if f._devices is not None else set()
    if not planned:
        return findings
    calls = re.compile(r"\b(" + "|".join(sorted(planned)) + r")\(")
    fixes = {id(x): x.fix for x in findings if x.fix is not None}
    uses = {key: set(calls.findall(" ".join(e.content for e in fix.edits))) for key, fix in fixes.items()}
    users = [x for x in findings if uses.get(id(x))]
    if not users:
        return findings
    first = min(e.start for x in users for e in fixes[id(x)].edits if calls.search(e.content))
    try:
        made = definitions_edit(f.devices, set().union(*uses.values()), first)
    except Unspellable as exc:
        return [x.for_a_person(f"portable: {exc}") if uses.get(id(x)) else x for x in findings]
    if made is None:
        return findings
    edit, imports = made
    out = []
    for x in findings:
        if uses.get(id(x)):
            names = ", ".join(sorted(uses[id(x)]))
            own = fixes[id(x)]
            fix = replace(
                own,
                edits=[*own.edits, edit],
                imports=list(dict.fromkeys([*own.imports, *imports])),
                description=f"{own.description}; defines {names} after the imports",
            )
            x = x.with_fix(fix.locate(f.index))
        out.append(x)
    return out
