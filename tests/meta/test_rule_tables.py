"""The rule tables themselves: unique codes, complete docs, examples, consistent categories."""

from __future__ import annotations

import ast
import re
import string
from collections import Counter

import pytest

from migrate.core.rules import DOC_SECTIONS, load_rules
from migrate.scan.python.fixers import FIXERS as FIXERS_REGISTRY

RULES = load_rules()
QUALIFIED = [r for r in RULES if r.kind == "qualified-name"]
FIXERS = set(FIXERS_REGISTRY)  # the registry, not a second hand-kept list
PLACEHOLDERS = {"name", "target", "note"}
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\.\*|\*)?$")


def _ids(rules):
    return [r.code for r in rules]


def test_codes_and_names_are_unique():
    assert len(RULES) >= 25
    codes = Counter(r.code for r in RULES)
    names = Counter(r.name for r in RULES)
    assert [c for c, n in codes.items() if n > 1] == []
    assert [c for c, n in names.items() if n > 1] == []


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_doc_has_every_section(rule):
    for section in DOC_SECTIONS:
        assert rule.doc.get(section, "").strip(), f"{rule.code} lacks doc section {section}"


# ONNX rules are exercised on real graphs in tests/ops, not on source snippets.
WITH_EXAMPLES = [r for r in RULES if r.kind != "onnx-census"]


@pytest.mark.parametrize("rule", WITH_EXAMPLES, ids=_ids(WITH_EXAMPLES))
def test_examples_cover_before_and_noop(rule):
    befores = [e for e in rule.examples if "before" in e]
    noops = [e for e in rule.examples if "noop" in e]
    assert befores, f"{rule.code} has no 'before' example"
    assert noops, f"{rule.code} has no 'noop' example"
    for example in rule.examples:
        assert set(example) <= {"before", "after", "portable", "noop", "file", "target"}, example
        if example.get("file", "example.py").endswith(".py"):
            for key in ("before", "after", "portable", "noop"):
                if key in example:
                    ast.parse(example[key])  # every Python example is valid Python


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_fix_fields_match_category(rule):
    afters = [e for e in rule.examples if "after" in e]
    if rule.kind == "onnx-census":
        return  # their fix is `migrate decompose` / a re-export, tested in tests/ops
    if rule.category == "manual" or (rule.category == "perf" and not rule.fix_title):
        assert rule.fix_title is None, f"{rule.code} is manual but has a fix title"
        assert afters == [], f"{rule.code} is manual but shows a fixed example"
        return
    assert rule.fix_title, f"{rule.code} has a fix but no fix_title"
    names = rule.params.get("names", {})
    fixers = rule.params.get("fixers", {})
    if names and set(names) <= set(fixers):
        return  # the fixer's output is tested with the fixer
    assert afters, f"{rule.code} has a fix but no before/after example"
    for example in afters:
        assert example["after"] != example["before"]


@pytest.mark.parametrize("rule", QUALIFIED, ids=_ids(QUALIFIED))
def test_targets_agree_with_category(rule):
    names = rule.params["names"]
    assert isinstance(names, dict) and names, f"{rule.code} has an empty name table"
    for key, target in names.items():
        assert _DOTTED.match(key), f"{rule.code}: bad key {key!r}"
        if target is None:
            assert rule.category in ("manual", "perf"), (
                f"{rule.code}: {key} has no target but the rule is {rule.category}"
            )
            continue
        assert rule.category != "manual", f"{rule.code}: manual rule maps {key} to {target}"
        assert _DOTTED.match(target), f"{rule.code}: bad target {target!r}"
        assert key.endswith(".*") == target.endswith(".*"), f"{rule.code}: {key} -> {target}"


@pytest.mark.parametrize("rule", QUALIFIED, ids=_ids(QUALIFIED))
def test_notes_fixers_and_placeholders(rule):
    names = rule.params["names"]
    notes = rule.params.get("notes", {})
    fixers = rule.params.get("fixers", {})
    assert set(notes) <= set(names), f"{rule.code}: notes for unknown names"
    assert set(fixers) <= set(names), f"{rule.code}: fixers for unknown names"
    assert set(fixers.values()) <= FIXERS, f"{rule.code}: unknown fixer"
    assert all(names[k] is not None for k in fixers), f"{rule.code}: fixer without target"
    used = {
        field
        for text in (rule.message, rule.fix_title or "")
        for _, field, _, _ in string.Formatter().parse(text)
        if field
    }
    assert used <= PLACEHOLDERS, f"{rule.code}: unknown placeholders {used - PLACEHOLDERS}"
    if "note" in used:
        missing = sorted(set(names) - set(notes))
        assert not missing, f"{rule.code}: message uses {{note}} but {missing} have none"
    if "target" in used:
        assert None not in names.values(), f"{rule.code}: message uses {{target}}"
    for key, note in notes.items():
        assert note.strip() and "  " not in note.strip(), f"{rule.code}: note for {key}"


def test_each_name_belongs_to_one_rule():
    owners: dict[str, list[str]] = {}
    for rule in QUALIFIED:
        for key in rule.params["names"]:
            owners.setdefault(key, []).append(rule.code)
    shared = {k: v for k, v in owners.items() if len(v) > 1}
    assert shared == {}


def test_rules_needing_torch_npu_declare_the_import():
    """The import is declared where a fix may name torch_npu, and added only where the fixed
    code names it (torch_npu >= 2.5 autoloads: torch.npu needs no import)."""
    for rule in QUALIFIED:
        targets = [t for t in rule.params["names"].values() if t]
        if any(t.startswith(("torch.npu", "torch_npu")) for t in targets):
            assert "import torch_npu" in rule.imports, rule.code
    for rule in RULES:
        for example in rule.examples:
            for key in ("after", "portable"):
                if key not in example:
                    continue
                code = "\n".join(
                    line
                    for line in example[key].splitlines()
                    if not line.lstrip().startswith(("import ", "from "))
                )
                names = re.search(r"(?<![\w.])torch_npu\b", code) is not None
                has = re.search(r"^\s*import torch_npu\s*$", example[key], re.M) is not None
                before = re.search(r"^\s*import torch_npu\s*$", example["before"], re.M)
                assert has == (names or before is not None), (rule.code, key)


def test_every_row_states_its_impact_and_perf_rows_are_perf():
    """SARIF/GitHub levels follow the impact: it is stated in each row, never defaulted."""
    import yaml

    from migrate.core.resources import rules_dir

    for path in sorted(rules_dir().glob("*.yaml")):
        for raw in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("rules", []):
            assert raw.get("impact") in ("crash", "behaviour", "noop", "perf"), (
                f"{path.name}: {raw['code']} states no impact"
            )
            assert (raw["impact"] == "perf") == (raw["category"] == "perf"), raw["code"]
