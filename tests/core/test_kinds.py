"""Rule kinds: one table for both engines; rows validated against the kind's params schema."""

from __future__ import annotations

import textwrap

import pytest

import migrate.scan.python.kinds as python_kinds
from migrate.core.errors import RuleError
from migrate.core.kinds import KINDS, kind, param, rule_kind
from migrate.core.registry import RegistryError
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
    assert rules and all(
        kind("python", r.kind) or kind("text", r.kind) or kind("onnx", r.kind) for r in rules
    )


@pytest.mark.parametrize(
    "params, message",
    [
        (
            "{keyword: [device], match: '^cuda$', prefilter: [cuda]}",
            r"t.yaml: rule MIG901: unknown params key 'keyword' for kind 'context-string'",
        ),
        (
            "{keywords: device, match: '^cuda$', prefilter: [cuda]}",
            r"t.yaml: rule MIG901: params key 'keywords' must be a list, not str",
        ),
        (
            "{keywords: [device], prefilter: [cuda]}",
            r"t.yaml: rule MIG901: kind 'context-string' needs params key 'match'",
        ),
        (
            "{keywords: [device], match: '^cuda$'}",
            r"t.yaml: rule MIG901: gives the Python prefilter no tokens",
        ),
    ],
)
def test_bad_params_fail_the_load_naming_file_rule_and_key(tmp_path, params, message):
    with pytest.raises(RuleError, match=message):
        _load(tmp_path, "context-string", params)


def test_unknown_kind_fails_the_load(tmp_path):
    with pytest.raises(RuleError, match="unknown kind 'nope'"):
        _load(tmp_path, "nope", "{}")


def test_a_kind_without_tokens_fails_at_registration():
    with pytest.raises(RegistryError, match="declares no prefilter tokens"):
        rule_kind("tokenless", engine="python", params={}, tokens=None)(lambda f, rules: None)


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"reads": "docstrings"}, "reads 'docstrings'"), ({"targets": ("gpu",)}, r"targets \['gpu'\]")],
)
def test_a_kind_declaring_an_unknown_context_or_target_fails_at_registration(extra, message):
    with pytest.raises(RegistryError, match=message):
        rule_kind("misdeclared", engine="python", params={}, tokens=lambda r, rs: (), **extra)(
            lambda f, rules: None
        )


def test_a_kind_in_a_new_module_is_picked_up(tmp_path, monkeypatch):
    """A new module in the kinds package is all a new kind needs."""
    folder = tmp_path / "extra_kinds"
    folder.mkdir()
    (folder / "shout.py").write_text(
        textwrap.dedent("""
        import ast
        from migrate.core.kinds import Token, param, rule_kind

        @rule_kind("shout-call", engine="python", params={"word": param(str, required=True)},
                   tokens=lambda rule, rules: {Token(rule.params["word"])})
        def run(f, rules):
            for node in f.nodes(ast.Name):
                for rule in rules:
                    if node.id == rule.params["word"]:
                        f.report_node(rule, node, {"name": node.id}, None)
    """)
    )
    monkeypatch.setattr(python_kinds, "__path__", [*python_kinds.__path__, str(folder)])
    try:
        KINDS.rediscover()
        rules = _load(tmp_path, "shout-call", "{word: SHOUT}")
        found = scan_text("x = SHOUT\n", "m.py", "python", rules)
        assert [(f.rule, f.line, f.message) for f in found] == [("MIG901", 1, "found SHOUT")]
    finally:
        KINDS.unregister("python:shout-call")


def test_kind_may_not_be_run_by_an_engine_it_lacks(tmp_path):
    (tmp_path / "t.yaml").write_text(
        ROW.format(kind="method-rename", params="{attrs: {cuda: npu}}").replace(
            "    params:", "    files: [shell]\n    params:"
        )
    )
    with pytest.raises(RuleError, match="kind 'method-rename' has no text matcher"):
        load_rules(tmp_path)


def test_param_types():
    assert param(list).accepts([]) and not param(list).accepts("x")
    assert not param(int).accepts(True)  # YAML booleans are not counts


# -- every cross-reference of a row, and every nested value, is checked when the rules load --
def _load_row(tmp_path, kind: str, params: str, extra: str = ""):
    (tmp_path / "t.yaml").write_text(
        ROW.format(kind=kind, params=params).replace("    doc:", extra + "    doc:")
    )
    return load_rules(tmp_path)


QN = "{names: {flash_attn.flash_attn_func: torch_npu.npu_fusion_attention}, %s}"


@pytest.mark.parametrize(
    "kind, params, extra, message",
    [
        # a fixer nobody registered, or one for a name the row does not list
        (
            "qualified-name",
            QN % "fixers: {flash_attn.flash_attn_func: flash-atention}",
            "",
            r"t.yaml: rule MIG901: params key 'fixers' \['flash_attn.flash_attn_func'\]: "
            r"no fixer 'flash-atention' is registered \(known: .*flash-attention",
        ),
        (
            "qualified-name",
            QN % "fixers: {flash_attn.flash_atn_func: flash-attention}",
            "",
            r"params key 'fixers' \['flash_attn.flash_atn_func'\]: params.names has no",
        ),
        (
            "qualified-name",
            QN % "notes: {flash_attn.flash_atn_func: a note}",
            "",
            r"params key 'notes' \['flash_attn.flash_atn_func'\]: params.names has no",
        ),
        # a portable form for a name the row does not list, or with an unknown placeholder
        (
            "qualified-name",
            QN % "prefilter: [flash_attn]",
            "    portable: {names: {flash_attn.other: torch.x}}\n",
            r"portable key 'names' \['flash_attn.other'\]: params.names has no",
        ),
        (
            "qualified-name",
            QN % "prefilter: [flash_attn]",
            "    portable: {names: {flash_attn.flash_attn_func: 'f({device_tpye})'}}\n",
            r"portable key 'names' \['flash_attn.flash_attn_func'\]: unknown placeholder "
            r"\{device_tpye\}",
        ),
        (
            "method-rename",
            "{attrs: {cuda: {to: npu}}}",
            "    portable: {attrs: {cdua: {to: to}}}\n",
            r"portable key 'attrs' \['cdua'\]: params.attrs has no 'cdua'",
        ),
        (
            "call-keyword",
            "{calls: [f], keywords: [k]}",
            "    portable: {value: x}\n",
            r"kind 'call-keyword' has no portable forms",
        ),
        # nested values: their types, shapes, regexes and fixed choices
        (
            "qualified-name",
            "{names: {torch.cuda.x: 3}}",
            "",
            r"params key 'names' \['torch.cuda.x'\] must be a string or null, not int",
        ),
        (
            "method-rename",
            "{attrs: {cuda: {to: npu, cal: true}}}",
            "",
            r"params key 'attrs' \['cuda'\]: unknown key 'cal' \(known: call, to\)",
        ),
        (
            "context-string",
            "{match: '^cuda$', prefilter: [cuda], calls: {torch.device: [0.5]}}",
            "",
            r"params key 'calls' \['torch.device'\] \[0\] must be an integer or string, not float",
        ),
        (
            "context-string",
            "{match: '^cuda$', prefilter: [cuda], replace: [['^cuda']]}",
            "",
            r"params key 'replace' \[0\]: a \[pattern, replacement\] pair has 2 strings, not 1",
        ),
        (
            "context-string",
            "{match: '^cuda(', prefilter: [cuda]}",
            "",
            r"params key 'match': not a valid regular expression",
        ),
        (
            "hand-kernel",
            "{pattern: rms-nrom}",
            "",
            r"params key 'pattern': no detector 'rms-nrom' is registered \(known: .*rms-norm",
        ),
        (
            "env-var",
            "{vars: {CUDA_HOME: null}, notes: {CUDA_HOEM: a note}}",
            "",
            r"params key 'notes' \['CUDA_HOEM'\]: the row lists no variable 'CUDA_HOEM'",
        ),
        (
            "dependency-version",
            "{mode: contain, versions: {torch: '2.14.0'}}",
            "",
            r"params key 'mode': 'contain' is not one of contains, minimum, companion",
        ),
        # the row's own cross-references: imports and file kinds
        (
            "call-keyword",
            "{calls: [f], keywords: [k]}",
            "    imports: [torch_npu]\n",
            r"imports entry 'torch_npu' is not one import statement",
        ),
        (
            "call-keyword",
            "{calls: [f], keywords: [k]}",
            "    files: [pyhton]\n",
            r"files 'pyhton' is not a file kind",
        ),
    ],
)
def test_a_typo_in_a_row_fails_the_load_naming_file_rule_and_key(tmp_path, kind, params, extra, message):
    with pytest.raises(RuleError, match=message):
        _load_row(tmp_path, kind, params, extra)


def test_loaded_rule_data_is_read_only(tmp_path):
    (rule,) = _load_row(tmp_path, "qualified-name", QN % "notes: {}")
    with pytest.raises(TypeError):
        rule.params["names"]["torch.cuda.x"] = "torch.npu.x"
    assert isinstance(rule.params["names"], dict)  # still reads (and dumps) as a mapping


def test_shipped_rows_pass_the_full_depth_check():
    assert len(load_rules()) >= 90  # every shipped row: schemas, refs, placeholders
