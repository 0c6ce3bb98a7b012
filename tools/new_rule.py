"""Scaffold a plug-in where its registry finds it: a rule, a decomposition, a doctor check or
a precision class. What a person must write is left as ``PLACEHOLDER``
(migrate/core/registry.py), which every loader of that kind refuses, naming the field: the
scaffold fails loudly until it is filled in (README, "Where things go").

    python tools/new_rule.py rule MIG432 my-rule-name rules/backends.yaml [--kind K] [--category C]
        a row at the end of the rule file: its doc (what, why, example, fix_safety) and its
        examples (the rule's tests: tests/meta/test_rule_examples.py) to fill in
    python tools/new_rule.py decomposition my-op-arith OpType
        migrate/ops/decompose/rules/my_op_arith.py and tests/ops/test_ops_decompose_my_op_arith.py
    python tools/new_rule.py doctor-check my-check GROUP [--order N]
        migrate/doctor/checks/my_check.py and tests/doctor/test_check_my_check.py
    python tools/new_rule.py precision-class float8_e4m3fn [--mantissa M --min-exp E]
        its dtype facts (from torch.finfo, or given) in FACTS of migrate/precision/classes.py
        and its bands to fill in under dtypes: of migrate/precision/thresholds.yaml

Nothing is overwritten: a file, code, name or class that exists already is an error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from migrate.core.registry import PLACEHOLDER  # noqa: E402

TODO = json.dumps(PLACEHOLDER)  # as a quoted YAML / Python string


class ScaffoldError(Exception):
    """What stops a scaffold (the thing exists already, a bad name): one line."""


def _new_file(path: Path, text: str) -> Path:
    if path.exists():
        raise ScaffoldError(f"{path}: exists already")
    path.write_text(text, encoding="utf-8")
    return path


def _module_name(name: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise ScaffoldError(f"{name!r}: a name is kebab-case (lower-case words joined by '-')")
    return name.replace("-", "_")


def rule(root: Path, code: str, name: str, file: str, kind: str, category: str) -> list[Path]:
    """A rule row at the end of ``file`` (under rules/)."""
    if not re.fullmatch(r"MIG\d{3}", code):
        raise ScaffoldError(f"{code!r}: a rule code is MIGnnn")
    _module_name(name)
    path = root / file
    if path.parent != root / "rules" or path.suffix != ".yaml" or not path.is_file():
        raise ScaffoldError(f"{file}: give an existing rules/*.yaml file (README: the code ranges)")
    for other in sorted((root / "rules").glob("*.yaml")):
        text = other.read_text(encoding="utf-8")
        if re.search(rf"^\s*-?\s*code:\s*{code}\s*$", text, re.M):
            raise ScaffoldError(f"{other.relative_to(root)}: {code} exists already")
        if re.search(rf"^\s*name:\s*{re.escape(name)}\s*$", text, re.M):
            raise ScaffoldError(f"{other.relative_to(root)}: a rule is named {name} already")
    text = path.read_text(encoding="utf-8")
    first = re.search(r"^( *)- code:", text, re.M)
    indent = first.group(1) if first else ""
    row = f"""
- code: {code}
  name: {name}
  kind: {kind}
  category: {category}
  message: {TODO}
  params: {{todo: {TODO}}}  # the kind's params (migrate/core/kinds.py, README "a rule kind")
  doc:
    what: {TODO}
    why: {TODO}
    example: {TODO}
    fix_safety: {TODO}
  examples:  # the rule's tests: before/after pairs, and noop code it must leave alone
  - before: {TODO}
    after: {TODO}
  - noop: {TODO}
"""
    row = "".join(indent + line if line.strip() else line for line in row.splitlines(keepends=True))
    path.write_text(text.rstrip("\n") + "\n" + row, encoding="utf-8")
    return [path]


def decomposition(root: Path, name: str, op: str) -> list[Path]:
    """A decomposition module and its test stub."""
    module = _module_name(name)
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", op):
        raise ScaffoldError(f"{op!r}: an ONNX op type (CamelCase)")
    src = f'''"""{op} -> {PLACEHOLDER}: the ops it becomes, and for which attributes."""

from __future__ import annotations

from migrate.ops.decompositions import decomposition


@decomposition({json.dumps(name)}, {json.dumps(op)}, emits=[{TODO}])
def {module}(node, b):
    """{PLACEHOLDER}: one line, what the rewrite computes (the README's list)."""
    # the new output values, or Decline("why") (migrate.ops.decompose.build) to keep the node
    raise NotImplementedError({TODO})
'''
    test = f'''"""The {name} decomposition (migrate/ops/decompose/rules/{module}.py), checked numerically."""

import pytest


def test_{module}_matches_the_op() -> None:
    pytest.fail({TODO})  # run the op and its decomposition on real inputs (onnxruntime)
'''
    return [
        _new_file(root / "migrate" / "ops" / "decompose" / "rules" / f"{module}.py", src),
        _new_file(root / "tests" / "ops" / f"test_ops_decompose_{module}.py", test),
    ]


def doctor_check(root: Path, check_id: str, group: str, order: int) -> list[Path]:
    """A doctor check module and its test stub."""
    module = _module_name(check_id)
    src = f'''"""{PLACEHOLDER}: what this check asks of the host, and why a port needs it."""

from __future__ import annotations

from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context
from migrate.doctor.report import Outcome


@CHECKS.register({json.dumps(check_id)}, group={json.dumps(group)}, order={order})
def {module}(ctx: Context) -> Outcome:
    """{PLACEHOLDER}: the facts of ``ctx`` it reads and what each status means."""
    raise NotImplementedError({TODO})  # return Outcome("ok" | "warn" | "fail" | "skip", summary, ...)
'''
    test = f'''"""The {check_id} doctor check (migrate/doctor/checks/{module}.py) on fake hosts."""

import pytest


def test_{module}_on_a_host_that_fails_it(host, fpy, doctor) -> None:
    pytest.fail({TODO})  # break one fact of a ready host (fakehost.ready_host) and run doctor
'''
    return [
        _new_file(root / "migrate" / "doctor" / "checks" / f"{module}.py", src),
        _new_file(root / "tests" / "doctor" / f"test_check_{module}.py", test),
    ]


def _finfo(dtype: str) -> tuple[int, int]:
    try:
        import torch
    except ImportError:
        raise ScaffoldError("no torch here: give --mantissa and --min-exp") from None
    found = getattr(torch, dtype, None)
    if not isinstance(found, torch.dtype) or not found.is_floating_point:
        raise ScaffoldError(f"torch.{dtype} is not a floating dtype: give --mantissa and --min-exp")
    info = torch.finfo(found)
    mantissa = round(-torch.log2(torch.tensor(info.eps, dtype=torch.float64)).item())
    min_exp = round(torch.log2(torch.tensor(info.tiny, dtype=torch.float64)).item())
    return mantissa, min_exp


def precision_class(root: Path, name: str, mantissa: int | None, min_exp: int | None) -> list[Path]:
    """The class's dtype facts in FACTS (classes.py) and its bands to fill in (thresholds.yaml)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ScaffoldError(f"{name!r}: a precision class is named as its dtype (float8_e4m3fn)")
    if (mantissa is None) != (min_exp is None):
        raise ScaffoldError("give both --mantissa and --min-exp, or neither (torch.finfo)")
    dtypes = ""
    if mantissa is None:
        mantissa, min_exp = _finfo(name)
        dtypes = f", ({json.dumps(name)},)"  # a tensor dtype: judged by the class
    classes = root / "migrate" / "precision" / "classes.py"
    thresholds = root / "migrate" / "precision" / "thresholds.yaml"
    src, bands = classes.read_text(encoding="utf-8"), thresholds.read_text(encoding="utf-8")
    facts = re.search(r"^FACTS: dict\[str, DtypeFacts\] = \{\n(.*?)^\}\n", src, re.M | re.S)
    entries = re.search(r"^dtypes:\n", bands, re.M)
    if facts is None or entries is None:
        raise ScaffoldError(f"{classes} or {thresholds}: FACTS or dtypes: not found")
    if re.search(rf'^    "{name}":', facts.group(1), re.M) or re.search(rf"^  {name}:", bands, re.M):
        raise ScaffoldError(f"precision class {name} exists already")
    row = f'    "{name}": DtypeFacts({mantissa}, {min_exp}{dtypes}),\n'
    classes.write_text(src[: facts.end(1)] + row + src[facts.end(1) :], encoding="utf-8")
    entry = "".join(f"    {key}: {TODO}\n" for key in ("rtol", "atol", "atol_rms", "why"))
    thresholds.write_text(
        bands[: entries.end()] + f"  {name}:\n" + entry + bands[entries.end() :], encoding="utf-8"
    )
    return [classes, thresholds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("rule", help="a rule row (doc and examples to fill in)")
    p.add_argument("code")
    p.add_argument("name")
    p.add_argument("file", help="the rules/*.yaml file of its code range")
    p.add_argument("--kind", default="context-string", help="its rule kind (migrate rules --kinds)")
    p.add_argument("--category", default="manual", choices=["auto", "assisted", "manual", "perf"])
    p = sub.add_parser("decomposition", help="an ONNX decomposition module and its test stub")
    p.add_argument("name")
    p.add_argument("op")
    p = sub.add_parser("doctor-check", help="a doctor check module and its test stub")
    p.add_argument("id")
    p.add_argument("group")
    p.add_argument("--order", type=int, default=900, help="its place in the group")
    p = sub.add_parser("precision-class", help="a precision class: its facts, its bands to fill in")
    p.add_argument("name")
    p.add_argument("--mantissa", type=int, help="explicit mantissa bits (without torch.finfo)")
    p.add_argument("--min-exp", type=int, help="exponent of the smallest normal")
    args = parser.parse_args(argv)
    try:
        if args.what == "rule":
            made = rule(args.root, args.code, args.name, args.file, args.kind, args.category)
        elif args.what == "decomposition":
            made = decomposition(args.root, args.name, args.op)
        elif args.what == "doctor-check":
            made = doctor_check(args.root, args.id, args.group, args.order)
        else:
            made = precision_class(args.root, args.name, args.mantissa, args.min_exp)
    except ScaffoldError as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path in made:
        print(f"wrote {path}: fill in every {PLACEHOLDER!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
