"""Every rule's documented examples run through the real scan and apply.

`before` must be flagged by its rule; `after` is what `migrate apply --target npu` (or the
example's `target`) makes of `before` (with --unsafe-fixes for assisted rules), `portable`
what `--target portable` makes of it in a package without device helpers of its own; `noop`
must not be flagged by its rule in any target. The examples render the docs (`migrate rules
ID`), so this keeps the docs true.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from migrate.core.filekinds import detect
from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan
from migrate.scan.project import EXAMPLE
from migrate.scan.ruleset import RuleSet

RULES = list(default_rules())
RULESET = RuleSet(RULES)  # compiled once for every example
CASES = [(rule, i, ex) for rule in RULES if rule.kind != "onnx-census" for i, ex in enumerate(rule.examples)]


def _kind(example: dict) -> tuple[str, str]:
    name = example.get("file", "example.py")
    return name, detect(Path(name))


@pytest.mark.parametrize("rule,i,example", CASES, ids=[f"{r.code}-{i}" for r, i, _ in CASES])
def test_example(rule, i, example):
    name, kind = _kind(example)
    assert kind, f"{rule.code} example {i}: no file kind for {name}"
    if "noop" in example:
        for target in ("npu", "portable"):
            found = engine_scan(example["noop"], name, kind, RULESET, target)
            assert [f for f in found if f.rule == rule.code and not f.npu_aware] == []
        return
    main = example.get("target", "npu")  # `after` is made with this target
    found = engine_scan(example["before"], name, kind, RULESET, main)
    assert any(f.rule == rule.code for f in found), f"{rule.code} does not flag its example"
    # Version pins (MIG75x) re-pin torch in every requirements example; they are applied
    # only to their own examples, so the others show one rule's change at a time.
    fixing = RuleSet([r for r in RULES if r.kind != "dependency-version" or r is rule])
    for key, target in (("after", main), ("portable", "portable")):
        if key in example:
            devices = EXAMPLE if target == "portable" else None
            text, _, _, error = fix_text(
                example["before"],
                name,
                kind,
                fixing,
                partial(engine_scan, target=target, devices=devices),
                unsafe=rule.category == "assisted",
            )
            assert error is None
            assert text == example[key], f"{rule.code} example {i}, --target {target}"
