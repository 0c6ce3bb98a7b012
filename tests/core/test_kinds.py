"""Rule kinds: one table for both engines; rows validated against the kind's params schema."""

from __future__ import annotations

import textwrap

import pytest

import migrate.scan.python.kinds as python_kinds
from migrate.core.kinds import KINDS, kind, param, rule_kind
from migrate.core.registry import RegistryError
from migrate.core.errors import RuleError
from migrate.core.rules import load_rules
from migrate.scan.engine import scan_text

ROW = """
rules:
  - code: MIG901
    name: test-rule
    kind: {kind}
    category: manual
    message: "found {{name}}"
    params: {params}
    doc: {{what: w, why: y, example: e, fix_safety: f}}
"""


def _load(tmp_path, kind: str, params: str):
    (tmp_path / "t.yaml").write_text(ROW.format(kind=kind, params=params))
    return load_rules(tmp_path)


def test_every_shipped_rule_loads_against_its_kind():
    rules = load_rules()
    assert rules and all(kind("python", r.kind) or kind("text", r.kind) or kind("onnx", r.kind)
                         for r in rules)


@pytest.mark.parametrize("params, message", [
    ("{keyword: [device], match: '^cuda$', prefilter: [cuda]}",
     r"t.yaml: rule MIG901: unknown params key 'keyword' for kind 'context-string'"),
    ("{keywords: device, match: '^cuda$', prefilter: [cuda]}",
     r"t.yaml: rule MIG901: params key 'keywords' must be a list, not str"),
    ("{keywords: [device], prefilter: [cuda]}",
     r"t.yaml: rule MIG901: kind 'context-string' needs params key 'match'"),
    ("{keywords: [device], match: '^cuda$'}",
     r"t.yaml: rule MIG901: gives the Python prefilter no tokens"),
])
def test_bad_params_fail_the_load_naming_file_rule_and_key(tmp_path, params, message):
    with pytest.raises(RuleError, match=message):
        _load(tmp_path, "context-string", params)


def test_unknown_kind_fails_the_load(tmp_path):
    with pytest.raises(RuleError, match="unknown kind 'nope'"):
        _load(tmp_path, "nope", "{}")


def test_a_kind_without_tokens_fails_at_registration():
    with pytest.raises(RegistryError, match="declares no prefilter tokens"):
        rule_kind("tokenless", engine="python", params={}, tokens=None)(lambda f, rules: None)


def test_a_kind_in_a_new_module_is_picked_up(tmp_path, monkeypatch):
    """A new module in the kinds package is all a new kind needs."""
    folder = tmp_path / "extra_kinds"
    folder.mkdir()
    (folder / "shout.py").write_text(textwrap.dedent('''
        import ast
        from migrate.core.kinds import Token, param, rule_kind

        @rule_kind("shout-call", engine="python", params={"word": param(str, required=True)},
                   tokens=lambda rule, rules: {Token(rule.params["word"])})
        def run(f, rules):
            for node in f.nodes(ast.Name):
                for rule in rules:
                    if node.id == rule.params["word"]:
                        f.report_node(rule, node, {"name": node.id}, None)
    '''))
    monkeypatch.setattr(python_kinds, "__path__", [*python_kinds.__path__, str(folder)])
    try:
        KINDS.rediscover()
        rules = _load(tmp_path, "shout-call", "{word: SHOUT}")
        found = scan_text("x = SHOUT\n", "m.py", "python", rules)
        assert [(f.rule, f.line, f.message) for f in found] == [("MIG901", 1, "found SHOUT")]
    finally:
        KINDS.unregister("python:shout-call")


def test_kind_may_not_be_run_by_an_engine_it_lacks(tmp_path):
    (tmp_path / "t.yaml").write_text(ROW.format(kind="method-rename", params="{attrs: {cuda: npu}}")
                                     .replace("    params:", "    files: [shell]\n    params:"))
    with pytest.raises(RuleError, match="kind 'method-rename' has no text matcher"):
        load_rules(tmp_path)


def test_param_types():
    assert param(list).accepts([]) and not param(list).accepts("x")
    assert not param(int).accepts(True)  # YAML booleans are not counts
