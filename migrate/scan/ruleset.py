"""One compiled rule set per run: what every file of a scan is matched with, built once.

    RuleSet(rules)                     the selected rules, compiled
    ruleset.python(rel) -> Plan        the Python plan for a file path (path-limited kinds)
    ruleset.text(file_kind) -> Plan    the plan for a text file kind
    ruleset.onnx() -> Plan             the plan for ONNX models
    ruleset.kept(findings)             the findings of selected rules (shadows dropped)

A RuleSet holds everything the matchers used to re-derive per file: the shadow rules
(ruff parity: an unselected shipped rule of a selected kind still matches, to claim its
names, and its findings are dropped), each kind's compiled table (a kind's ``compile``
hook, migrate/core/kinds.py), the prefilters, and the per-path selection (kinds limited to
``setup.py``). It is built once in the parent process and handed to the scan workers
(inherited by fork, or pickled once per worker), and once per apply run to the rewriter.
Plans are built on first use and kept for the rest of the run: a tree has at most a few
distinct plans.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrate.core.findings import Finding
from migrate.core.kinds import RuleKind, kind, kinds_of
from migrate.core.rules import Rule, default_rules


@dataclass(frozen=True)
class Plan:
    """What one file is matched with: the rules, and each kind's compiled group, in the
    registry's kind order."""

    rules: tuple[Rule, ...]  # the rules that apply (shadows included)
    groups: tuple[tuple[RuleKind, Any], ...]  # (kind, compiled group) for kinds with rules
    prefilter: Any = None  # python: a file lacking every token has no finding (None: read all)
    hits: Any = None  # python: the tokens whose lines the matchers walk (None: every line)
    by_code: dict[str, Rule] = field(default_factory=dict)
    # text: each rule with the lower-case words a file must hold one of (None: always runs)
    triggers: tuple[tuple[Rule, tuple[str, ...] | None], ...] = ()


class RuleSet:
    def __init__(self, rules: Sequence[Rule]):
        self.rules = tuple(rules)
        self.matching, self.keep = shadows(self.rules)
        self._limited = {k.name: k.paths for k in kinds_of("python") if k.paths}
        # one regex per path-limited kind, on the file's base name (fnmatch per file is slow)
        self._globs = {
            name: re.compile("|".join(fnmatch.translate(p) for p in globs))
            for name, globs in self._limited.items()
        }
        self._plans: dict[tuple, Plan] = {}
        self._prefilters: dict[tuple, Any] = {}  # by (path-limited kinds, target)

    @classmethod
    def of(cls, rules: RuleSet | Sequence[Rule]) -> RuleSet:
        """``rules`` compiled (a RuleSet is returned as it is)."""
        return rules if isinstance(rules, RuleSet) else cls(rules)

    def kept(self, findings: list[Finding]) -> list[Finding]:
        """The findings of the selected rules (a shadow rule's findings are dropped)."""
        keep = self.keep
        return findings if keep is None else [f for f in findings if f.rule in keep]

    # -- plans ---------------------------------------------------------------------------
    def python(self, rel: str) -> Plan:
        """The plan for the Python file ``rel``: kinds limited to some file names (setup.py)
        apply only to those names."""
        applying = self._applying(rel)
        key = ("python", applying)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._python_plan(applying)
        return plan

    def prefilter(self, rel: str, target: str | None = None):
        """The prefilter for the Python file ``rel`` scanned for ``target``: the plan's, less
        the tokens of kinds that never report under the target (None: read every file)."""
        plan = self.python(rel)
        if target is None or not any(spec.targets for spec, _ in plan.groups):
            return plan.prefilter
        applying = self._applying(rel)
        key = (applying, target)
        if key not in self._prefilters:
            from migrate.scan.python.prefilter import python_prefilter

            self._prefilters[key] = python_prefilter(self._applying_rules(self.rules, applying), target)
        return self._prefilters[key]

    def _applying(self, rel: str) -> frozenset[str]:
        """The path-limited kinds that apply to the Python file ``rel`` (by its base name)."""
        base = rel.rsplit("/", 1)[-1]
        return frozenset(name for name, rx in self._globs.items() if rx.match(base))

    def _applying_rules(self, rules: tuple[Rule, ...], applying: frozenset[str]) -> tuple[Rule, ...]:
        return tuple(r for r in rules if r.kind not in self._limited or r.kind in applying)

    def text(self, file_kind: str) -> Plan:
        key = ("text", file_kind)
        plan = self._plans.get(key)
        if plan is None:
            rules = tuple(r for r in self.matching if file_kind in r.files)
            plan = self._plans[key] = Plan(
                rules,
                (),
                by_code={r.code: r for r in rules},
                triggers=tuple((r, _triggers(r)) for r in rules),
            )
        return plan

    def onnx(self) -> Plan:
        """The plan for ONNX models: the selected rules only (the census reports per row)."""
        key = ("onnx",)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _plan(self.rules, "onnx", lambda r: True)
        return plan

    def text_groups(self, active: Sequence[Rule]) -> tuple[tuple[RuleKind, Any], ...]:
        """The compiled groups of the text ``active`` rules (those whose trigger words a file
        holds): compiled once per distinct set of active rules."""
        key = ("text-groups", tuple(r.code for r in active))
        hit = self._plans.get(key)
        if hit is None:
            hit = self._plans[key] = _plan(active, "text", lambda r: True)
        return hit.groups

    def _python_plan(self, applying: frozenset[str]) -> Plan:
        from migrate.scan.python.prefilter import python_prefilter

        selected = self._applying_rules(self.rules, applying)
        matching = self._applying_rules(self.matching, applying)
        plan = _plan(matching, "python", lambda r: "python" in r.files)
        return Plan(
            plan.rules, plan.groups, python_prefilter(selected), python_prefilter(matching), plan.by_code
        )


def _plan(rules: Iterable[Rule], engine: str, wanted) -> Plan:
    rules = tuple(rules)
    groups = []
    for spec in kinds_of(engine):
        group = tuple(r for r in rules if r.kind == spec.name and wanted(r))
        if group:
            groups.append((spec, spec.compile(group) if spec.compile else group))
    return Plan(rules, tuple(groups), by_code={r.code: r for r in rules})


def _triggers(rule: Rule) -> tuple[str, ...] | None:
    """Lower-case words of which a text file must contain one for ``rule`` to match (the
    tokens its kind derives from the row); None: it always runs."""
    spec = kind("text", rule.kind)
    words = tuple(sorted({t.literal.lower() for t in spec.tokens(rule, ())})) if spec else ()
    return words or None


def shadows(rules: tuple[Rule, ...]) -> tuple[tuple[Rule, ...], frozenset[str] | None]:
    """(rules to match with, codes to keep or None for all).

    ruff parity: ignoring a rule drops its findings, and no other rule takes them over.
    Rules of one kind share a table (longest match first), so an unselected shipped rule
    of a selected kind still matches, to claim its names, and its findings are dropped
    (``--ignore MIG101`` must not turn torch.cuda calls into MIG105 "unlisted" findings).
    Only for shipped rules: custom rule sets are matched as given."""
    shipped = default_rules()
    known = {id(r) for r in shipped}
    if not all(id(r) in known for r in rules) or len(rules) == len(shipped):
        return rules, None
    kinds = {r.kind for r in rules}
    codes = frozenset(r.code for r in rules)
    extra = tuple(r for r in shipped if r.kind in kinds and r.code not in codes)
    if not extra:
        return rules, None
    return tuple(sorted(rules + extra, key=lambda r: r.code)), codes
