"""Load and validate rule packs: rules/*.yaml. One table drives scan, apply and docs.

Schema of one rule (a list item under ``rules:`` in any rules/*.yaml file)::

    code: MIG101               # stable, unique
    name: torch-cuda-api       # kebab-case, names the pattern flagged
    kind: qualified-name       # matcher family (migrate/core/kinds.py: its params schema)
    category: auto             # auto | assisted | manual | perf
    impact: crash              # crash | behaviour | noop | perf: what the code does on an
                               # NPU if left as is (SARIF/GitHub levels follow it)
    effort: {minutes: 30, per: symbol}   # planning figure (see migrate/report/effort.py)
    message: "..."             # may use {placeholders} filled by the matcher
    fix_title: "..."           # what the fix does (absent for manual rules)
    imports: [import torch_npu]   # statements the fixed code needs
    files: [python]            # file kinds it applies to (python, shell, docker, yaml, ...)
    params: {...}              # kind-specific data, validated against the kind's schema
    portable: {...}            # the fix for --target portable, next to the NPU one (kind-specific:
                               # names -> generic API, device-type expressions, ...)
    transfer: patched          # transfer_to_npu patches these uses at run time (--target transfer)
    doc: {what, why, example, fix_safety, references?}
    examples: [{before, after, portable, target?}, {noop}]   # portable: --target portable's result
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from migrate.core.effort_spec import EffortError, check_effort
from migrate.core.errors import RuleError
from migrate.core.findings import CATEGORIES, IMPACTS
from migrate.core.registry import placeholders
from migrate.core.resources import rules_dir
from migrate.core.schema import freeze

DOC_SECTIONS = ("what", "why", "example", "fix_safety")  # every rule has these
DOC_OPTIONAL = ("references",)  # links to the sources a rule rests on
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~5x faster
_CODE = re.compile(r"^MIG\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    kind: str
    category: str
    message: str
    impact: str = "crash"
    fix_title: str | None = None
    imports: tuple[str, ...] = ()
    files: tuple[str, ...] = ("python",)
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    doc: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    examples: tuple[dict[str, str], ...] = field(default=(), hash=False, compare=False)
    effort: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    source: str = ""  # the YAML file it came from
    portable: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    transfer: str = "rewrite"  # patched: transfer_to_npu handles it, no rewrite

    def format_message(self, **values: Any) -> str:
        return _format(self.message, values)

    def format_fix_title(self, **values: Any) -> str:
        return _format(self.fix_title or "", values)


def _format(template: str, values: dict[str, Any]) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):
        return template


def _rule_from(raw: dict, source: str) -> Rule:
    missing = [k for k in ("code", "name", "kind", "category", "message") if k not in raw]
    if missing:
        raise RuleError(f"{source}: rule {raw.get('code', '?')} lacks {', '.join(missing)}")
    if not _CODE.match(str(raw["code"])):
        raise RuleError(f"{source}: bad rule code {raw['code']!r} (want MIGnnn)")
    if not _NAME.match(str(raw["name"])):
        raise RuleError(f"{source}: rule name {raw['name']!r} is not kebab-case")
    if raw["category"] not in CATEGORIES:
        raise RuleError(f"{source}: {raw['code']} has category {raw['category']!r}")
    if not isinstance(raw.get("params") or {}, dict):
        raise RuleError(f"{source}: rule {raw['code']}: params must be a mapping")
    doc_keys = set(raw.get("doc") or {}) - {*DOC_SECTIONS, *DOC_OPTIONAL}
    if doc_keys:
        raise RuleError(f"{source}: rule {raw['code']}: unknown doc sections {sorted(doc_keys)}")
    unknown = set(raw) - {
        "code",
        "name",
        "kind",
        "category",
        "impact",
        "effort",
        "message",
        "fix_title",
        "imports",
        "files",
        "params",
        "doc",
        "examples",
        "portable",
        "transfer",
    }
    if unknown:
        raise RuleError(f"{source}: {raw['code']} has unknown keys {sorted(unknown)}")
    impact = raw.get("impact", "perf" if raw["category"] == "perf" else "crash")
    if impact not in IMPACTS:
        raise RuleError(f"{source}: {raw['code']} has impact {impact!r} (want {', '.join(IMPACTS)})")
    if (impact == "perf") != (raw["category"] == "perf"):
        raise RuleError(f"{source}: {raw['code']}: impact perf goes with category perf, and only with it")
    effort = raw.get("effort") or {}
    try:
        check_effort(effort, f"{source}: {raw['code']} effort")
    except EffortError as exc:
        raise RuleError(str(exc)) from None
    return Rule(
        code=raw["code"],
        name=raw["name"],
        kind=raw["kind"],
        category=raw["category"],
        impact=impact,
        message=raw["message"].strip(),
        fix_title=raw.get("fix_title"),
        imports=_imports(raw, source),
        files=tuple(raw.get("files") or ("python",)),
        params=freeze(raw.get("params") or {}),
        doc={k: str(v).strip() for k, v in (raw.get("doc") or {}).items()},
        examples=tuple(raw.get("examples") or ()),
        effort=dict(effort),
        source=source,
        portable=_portable(raw, source),
        transfer=_transfer(raw, source),
    )


def _portable(raw: dict, source: str) -> dict[str, Any]:
    """The row's portable forms; their keys and shapes are its kind's (core/kinds.py)."""
    value = raw.get("portable") or {}
    if not isinstance(value, dict):
        raise RuleError(f"{source}: {raw['code']} portable must be a mapping")
    return freeze(value)


def _imports(raw: dict, source: str) -> tuple[str, ...]:
    """The row's ``imports``: each one import statement (apply places them)."""
    value = raw.get("imports") or []
    if not isinstance(value, list):
        raise RuleError(f"{source}: rule {raw['code']}: imports must be a list of statements")
    for stmt in value:
        try:
            body = ast.parse(str(stmt)).body if isinstance(stmt, str) else []
        except SyntaxError:
            body = []
        if len(body) != 1 or not isinstance(body[0], ast.Import | ast.ImportFrom):
            raise RuleError(
                f"{source}: rule {raw['code']}: imports entry {stmt!r} is not one import statement"
            )
    return tuple(value)


def _transfer(raw: dict, source: str) -> str:
    value = raw.get("transfer", "rewrite")
    if value not in ("rewrite", "patched"):
        raise RuleError(f"{source}: {raw['code']} transfer must be rewrite or patched")
    return value


def _check_filled(raw: Any, source: str) -> None:
    """A row tools/new_rule.py made and nobody finished fails the load, naming its fields."""
    left = placeholders(raw)
    if left:
        code = raw.get("code", "?") if isinstance(raw, dict) else "?"
        raise RuleError(f"{source}: rule {code} is a scaffold: fill in {', '.join(left)}")


def load_rules(folder: Path | None = None) -> list[Rule]:
    """All rules from every YAML file in ``folder`` (default: the shipped rules/), by code."""
    shipped = folder is None
    folder = folder or rules_dir()
    rules: dict[str, Rule] = {}
    names: dict[str, str] = {}
    for path in sorted(folder.glob("*.yaml")):
        if shipped:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or {}
        else:  # a folder given by the user: bounded regular files, bounded YAML
            from migrate.core.inputs import load_yaml

            data = load_yaml(path, "rule file") or {}
        if not isinstance(data, dict):
            raise RuleError(f"{path.name}: a rule file is a mapping with 'rules'")
        for raw in data.get("rules", []):
            _check_filled(raw, path.name)
            rule = _rule_from(raw, path.name)
            if rule.code in rules:
                raise RuleError(f"{path.name}: duplicate rule code {rule.code}")
            if rule.name in names:
                raise RuleError(f"{path.name}: rule name {rule.name} also used by {names[rule.name]}")
            rules[rule.code] = rule
            names[rule.name] = rule.code
    loaded = sorted(rules.values(), key=lambda r: r.code)
    from migrate.core.kinds import check_rule

    for rule in loaded:
        check_rule(rule, loaded)
    return loaded


@cache
def default_rules() -> tuple[Rule, ...]:
    return tuple(load_rules())


def rule_pack_digest() -> str:
    """A digest of the shipped rule files; part of the scan cache key."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for path in sorted(rules_dir().glob("*.yaml")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def select_rules(
    rules: tuple[Rule, ...] | list[Rule],
    select: list[str] | None,
    ignore: list[str] | None,
    extend: list[str] | None = None,
) -> list[Rule]:
    """Filter by codes or code prefixes (ruff style: MIG1 selects MIG100-MIG199) or names.

    Without ``select`` every rule but the perf advice is selected: perf rules (optional
    NPU-affinity advice) run only when ``select`` or ``extend`` names them, as ruff's
    opt-in rules. ``extend`` adds to the selection; ``ignore`` removes from it."""

    def hit(rule: Rule, patterns: list[str]) -> bool:
        return any(rule.code.startswith(p) or rule.name == p for p in patterns)

    chosen = [
        r
        for r in rules
        if (hit(r, select) if select else r.category != "perf") or (extend and hit(r, extend))
    ]
    return [r for r in chosen if not ignore or not hit(r, ignore)]
