"""The effort estimate: findings grouped into work packages a port lead can plan with.

The figures are planning assumptions (rules/effort_defaults.yaml, a rule row's ``effort:``,
a project's ``[tool.migrate.effort]``), not measurements; see migrate/core/effort_spec.py
for the fields. The rules of the model:

* one package per library across the project, or per unique symbol per file (as the rule
  says), never one per occurrence: 17 imports of one library are one decision; and symbols
  a person ports together are one decision too: per-symbol packages of one file whose
  findings share a ``Finding.decision`` (one device branch, its ``elif``/``else`` arms
  included: scan/python/decisions.py; one CI job; one container image:
  scan/text/targets.py) or lie within ``DECISION_LINES`` lines of each other are one
  package, at the dearest of their figures (one DataParallel branch with its
  ``device_count()`` test and its ``.cuda(i)`` is one hour, not three); the mechanical
  findings of a decision that holds work by hand are part of that package, not of the
  ``migrate apply`` one;
* code that does nothing on an NPU (impact ``noop``, e.g. ``cudnn.benchmark``) and code
  left as it is (a finding marked ``npu_aware``: an NPU arm beside it, a type check,
  NVIDIA-only code, code that never runs on the target: scan/python/awareness.py,
  scan/python/dead_code.py) cost nothing and are listed as free packages;
* uses behind ``try: import x`` / ``except ImportError: <fallback>`` are discounted
  (``guarded_factor``) and labelled;
* perf advice is optional: its packages are listed apart and never summed into the total.

In the scan JSON this is ``summary.effort`` (docs/contracts.md §3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from migrate.core.effort_spec import Defaults, EffortSpec, defaults, merge
from migrate.core.findings import REQUIRED, Finding
from migrate.core.rules import Rule


@dataclass
class Package:
    name: str
    minutes: float
    findings: int
    paths: list[str]
    why: str
    rules: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "minutes": round(self.minutes, 1),
            "findings": self.findings,
            "paths": self.paths,
            "why": self.why,
            "rules": self.rules,
        }


@dataclass
class Effort:
    minutes: float = 0.0
    packages: list[Package] = field(default_factory=list)  # required work, costliest first
    optional: list[Package] = field(default_factory=list)  # perf advice
    by_category: dict[str, float] = field(default_factory=lambda: {c: 0.0 for c in REQUIRED})
    basis: str = ""

    def describe(self) -> str:
        return format_minutes(self.minutes)

    @property
    def optional_minutes(self) -> float:
        return sum(p.minutes for p in self.optional)

    def to_json(self) -> dict:
        return {
            "minutes": round(self.minutes, 1),
            "packages": [p.to_json() for p in self.packages],
            "optional": {
                "minutes": round(self.optional_minutes, 1),
                "packages": [p.to_json() for p in self.optional],
            },
            "basis": self.basis,
        }


class EffortModel:
    """Which figure applies to a finding: defaults < rule row < project overrides.

    ``overrides`` maps a rule code or a category to minutes or to an effort row."""

    def __init__(self, rules: Mapping[str, Rule], overrides: Mapping[str, object] | None = None):
        self.rules = rules
        self.base: Defaults = defaults()
        self.overrides = {
            k: (v if isinstance(v, dict) else {"minutes": v}) for k, v in (overrides or {}).items()
        }
        self._cache: dict[tuple[str, str], EffortSpec] = {}

    def spec(self, rule_code: str, category: str) -> EffortSpec:
        key = (rule_code, category)
        if key not in self._cache:
            spec = self.base.categories.get(category, self.base.categories["manual"])
            if category in self.overrides:
                spec = merge(spec, self.overrides[category], category)
            rule = self.rules.get(rule_code)
            if rule is not None:
                if rule.impact in self.base.impacts:
                    spec = merge(
                        spec,
                        {
                            "minutes": self.base.impacts[rule.impact],
                            "why": f"{rule.impact} on an NPU: costs nothing",
                        },
                        category,
                    )
                spec = merge(spec, rule.effort, category)
            if rule_code in self.overrides:
                spec = merge(spec, self.overrides[rule_code], category)
            self._cache[key] = spec
        return self._cache[key]

    def spec_of(self, f: Finding) -> EffortSpec:
        """The figure for ``f``: its rule's, or for a notebook's mechanical edits (a rule with
        a fix and no effort row of its own, made by hand there) the notebook figure."""
        spec = self.spec(f.rule, f.category)
        rule = self.rules.get(f.rule)
        if (
            self.base.notebook is not None
            and f.path.endswith(".ipynb")
            and spec.minutes
            and rule is not None
            and rule.category in ("auto", "assisted")
            and not rule.effort
            and f.rule not in self.overrides
        ):
            return self.base.notebook
        return spec


def project_model(overrides: Mapping[str, object] | None = None) -> EffortModel:
    """The model of a scan: the shipped rule rows plus the project's [tool.migrate.effort]."""
    from migrate.core.rules import default_rules

    return EffortModel({r.code: r for r in default_rules()}, overrides)


def library_of(symbol: str) -> str:
    head = symbol.split(".", 1)[0].split("[", 1)[0].strip()
    return head.lower().replace("-", "_")


def _key(f: Finding, spec: EffortSpec) -> tuple:
    if spec.per == "project":
        return ("project", spec.group or f.rule)
    if spec.per == "library":
        return ("library", spec.library or library_of(f.symbol) or f.rule)
    if spec.per == "file":
        return ("file", spec.group or f.rule, f.path)
    return ("symbol", spec.group or f.rule, f.symbol or f.message, f.path)


def _label(key: tuple, spec: EffortSpec, rules: Mapping[str, Rule]) -> str:
    kind = key[0]
    if kind == "decision":
        path, line, symbols = key[1], key[2], key[3]
        more = f" and {len(symbols) - 1} more" if len(symbols) > 1 else ""
        return f"{symbols[0]}{more} at {path}:{line} (one decision)"
    if kind == "project":
        return spec.title or _rule_label(key[1], rules)
    if kind == "library":
        return f"{key[1]} (library)"
    if kind == "file":
        return spec.title or _rule_label(key[1], rules)
    return f"{key[2]} ({spec.title or key[1]})"


def _rule_label(code: str, rules: Mapping[str, Rule]) -> str:
    rule = rules.get(code)
    return f"{code} {rule.name}" if rule else code


def _free_reason(f: Finding, spec: EffortSpec) -> str | None:
    if getattr(f, "npu_aware", False):  # set by the port-target analysis where it runs
        return "already handles NPU"
    if spec.minutes == 0:
        return spec.why or "costs nothing"
    return None


DECISION_LINES = 3  # findings this close in one file belong to one decision


def estimate(findings: Iterable[Finding], model: EffortModel | Mapping[str, Rule]) -> Effort:
    if not isinstance(model, EffortModel):
        model = EffortModel(model)
    groups: dict[tuple, list[tuple[Finding, EffortSpec]]] = {}
    rows = [(f, model.spec_of(f)) for f in findings]
    by_hand = _hand_decisions(rows)
    for f, spec in rows:
        free = _free_reason(f, spec)
        key = _key(f, spec)
        if free is None and f.category == "auto" and (f.path, f.decision) in by_hand:
            key = ("symbol", spec.group or f.rule, f.symbol or f.message, f.path)  # part of that work
        if free is not None:
            key = ("free", free, *key)
        elif f.guarded:
            key = ("guarded", *key)
        groups.setdefault(key, []).append((f, spec))
    groups = _by_decision(groups)
    effort = Effort(basis=basis(model.base))
    for key, members in groups.items():
        pkg, category = _package(key, members, model)
        if category == "perf":
            effort.optional.append(pkg)
            continue
        effort.packages.append(pkg)
        effort.minutes += pkg.minutes
        effort.by_category[category] = effort.by_category.get(category, 0.0) + pkg.minutes
    effort.packages.sort(key=_order)
    effort.optional.sort(key=_order)
    return effort


def _hand_decisions(rows: list[tuple[Finding, EffortSpec]]) -> set[tuple[str, int]]:
    """The decisions (path, line) that hold work a person does by hand: the mechanical
    findings in them are part of that work, not of the `migrate apply` package."""
    return {
        (f.path, f.decision)
        for f, spec in rows
        if f.decision and f.category in ("assisted", "manual") and _free_reason(f, spec) is None
    }


def _symbol_key(key: tuple) -> tuple | None:
    """The per-symbol key inside ``key`` (plain or guarded), None for other packages."""
    core = key[1:] if key[0] == "guarded" else key
    return core if core[0] == "symbol" else None


def _by_decision(groups: dict[tuple, list]) -> dict[tuple, list]:
    """Per-symbol packages of one file joined where their findings are one decision: the
    same ``Finding.decision`` (one device branch, CI job or image), or findings within
    DECISION_LINES lines of each other (chained). A joined package is guarded only if all
    its findings are."""
    keys = [
        k for k in groups if _symbol_key(k) is not None and all(f.category != "perf" for f, _ in groups[k])
    ]  # optional perf advice stays apart
    parent = {k: k for k in keys}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    by_file: dict[str, list[tuple[int, tuple]]] = {}
    heads: dict[tuple[str, int], tuple] = {}
    for k in keys:
        for f, _ in groups[k]:
            by_file.setdefault(f.path, []).append((f.line, k))
            if f.decision:
                parent[root(k)] = root(heads.setdefault((f.path, f.decision), k))
    for rows in by_file.values():
        rows.sort(key=lambda r: r[0])
        for (a_line, a), (b_line, b) in zip(rows, rows[1:], strict=False):
            if b_line - a_line <= DECISION_LINES:
                parent[root(b)] = root(a)
    out: dict[tuple, list] = {k: v for k, v in groups.items() if k not in parent}
    members: dict[tuple, list[tuple]] = {}
    for k in keys:
        members.setdefault(root(k), []).append(k)
    for head, ks in members.items():
        if len(ks) == 1:
            out[head] = groups[head]
            continue
        joined = [m for k in sorted(ks, key=str) for m in groups[k]]
        first = min(f.decision or f.line for f, _ in joined)
        symbols = sorted({_symbol_key(k)[2] for k in ks})  # type: ignore[index]
        key: tuple = ("decision", joined[0][0].path, first, tuple(symbols))
        if all(k[0] == "guarded" for k in ks):
            key = ("guarded", *key)
        out[key] = joined
    return out


def _order(p: Package) -> tuple:
    return (-p.minutes, p.name, p.paths)


_RANK = {"perf": -1, "auto": 0, "assisted": 1, "manual": 2}


def _package(key: tuple, members: list[tuple[Finding, EffortSpec]], model: EffortModel):
    free = key[0] == "free"
    guarded = key[0] == "guarded"
    core = key[2:] if free else key[1:] if guarded else key
    spec = max((s for _, s in members), key=lambda s: (s.minutes, s.each_file))
    paths = sorted({f.path for f, _ in members})
    category = max((f.category for f, _ in members), key=lambda c: _RANK.get(c, 2))
    minutes = spec.minutes + spec.each_file * (len(paths) - 1)
    why = spec.why
    if spec.each_file and len(paths) > 1:
        why += f" ({spec.minutes:g} min + {spec.each_file:g} min x {len(paths) - 1} more files)"
    if free:
        minutes, why = 0.0, key[1]
    elif guarded:
        minutes *= model.base.guarded_factor
        why += f"; optional import with a fallback (try/except ImportError): x{model.base.guarded_factor:g}"
    rules = sorted({f.rule for f, _ in members})
    name = _label(core, spec, model.rules)
    if guarded:
        name += ", guarded import"
    return Package(name, minutes, len(members), paths, why, rules), category


def basis(base: Defaults) -> str:
    cats = base.categories
    parts = [f"{c} {cats[c].minutes:g} min per {cats[c].per}" for c in REQUIRED]
    notebook = f"; a notebook's hand-made edits {base.notebook.minutes:g} min" if base.notebook else ""
    return (
        "planning assumptions, not measurements: "
        + ", ".join(parts)
        + "; rule rows refine these; one package per decision (a device branch, a CI job, "
        f"an image){notebook}; no-ops, NPU-aware, NVIDIA-only code and code that never runs "
        f"on the target cost 0; guarded optional imports x{base.guarded_factor:g}; perf "
        "advice is optional and not summed "
        "(rules/effort_defaults.yaml, override in [tool.migrate.effort])"
    )


def format_minutes(minutes: float) -> str:
    """'0 min', '45 min', '2.5 h', '3.1 d' (8-hour days)."""
    if minutes < 60:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    if hours < 8 * 5:
        return f"{hours:.1f} h"
    return f"{hours / 8:.1f} d (8 h days)"
