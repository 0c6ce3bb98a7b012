"""Scan one Python file's text with the selected rules."""

from __future__ import annotations

import warnings

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.kinds import kinds_of
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.python.prefilter import python_hit_pattern
from migrate.scan.python.pyfile import PyFile
from migrate.scan.suppress import drop_suppressed, python_comments


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
                target: str = DEFAULT_TARGET) -> list[Finding]:
    f = parse_python(text, rel, python_hit_pattern(tuple(rules)))
    f.target = target
    for spec in kinds_of("python"):
        group = [r for r in rules if r.kind == spec.name and "python" in r.files]
        if group:
            spec.run(f, group)
    kept = drop_suppressed(f.findings, python_comments(text))
    settle_target(f, kept, rules, target)
    return sorted(kept, key=Finding.sort_key)


def env_vars_beside(f: PyFile, findings: list[Finding], codes: set[str]) -> None:
    """Portable: CUDA_VISIBLE_DEVICES keeps meaning something on CUDA hosts. In a list of
    names the Ascend one is added beside it; elsewhere the fix is left to a person."""
    import ast

    from migrate.core.findings import Edit

    from migrate.scan.python.spans import SpanIndex

    consts = SpanIndex([(*f.span(n), n) for n in f.nodes(ast.Constant)
                        if isinstance(n.value, str)])
    for x in findings:
        if x.rule not in codes or x.fix is None or len(x.fix.edits) != 1:
            continue
        start = f.index.offset(x.line, x.column - 1)
        node = consts.at(start)
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
    for x in findings:
        x.target = target
