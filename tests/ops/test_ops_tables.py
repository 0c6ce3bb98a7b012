"""The op tables themselves: provenance, docs, and registry hygiene."""

from __future__ import annotations

import pytest

from migrate.core.resources import op_registry_dir
from migrate.core.rules import DOC_SECTIONS, load_rules
from migrate.ops import decompositions as decomp
from migrate.ops.registry import load_yaml

WHEN = {"opset-above", "decomposable", "unsupported", "restricted", "custom-domain"}


def test_onnx_rules_are_documented_and_understood_by_the_hook():
    rules = [r for r in load_rules() if r.kind == "onnx-census"]
    assert [r.code for r in rules] == ["MIG801", "MIG802", "MIG803", "MIG804", "MIG805"]
    for rule in rules:
        assert set(DOC_SECTIONS) <= set(rule.doc), rule.code
        assert rule.params["when"] in WHEN
        assert rule.category in ("manual", "assisted")
        assert rule.files == ("onnx",)


def test_registry_files_carry_their_sources():
    base = op_registry_dir()
    for path in list(base.glob("aten/*/*.yaml")) + list(base.glob("onnx/*/*/ops.yaml")):
        assert load_yaml(path).get("source"), path
    from migrate.ops.onnx_limits import limits

    for op, checks in limits().items():
        for limit in checks:
            assert limit.source.startswith(("https://", "github:")), (op, limit)


def test_duplicate_decomposition_names_fail_at_registration():
    decomp.load_all()
    with pytest.raises(ValueError, match="registered twice"):
        decomp.decomposition("gelu-erf", "Gelu", emits=["Erf"])(lambda node, b: None)


def test_every_decomposition_declares_what_it_emits():
    for rules in decomp.load_all().values():
        for rule in rules:
            assert rule.emits and rule.doc, rule.name
