"""Property tests for the untrusted-input readers of core/ (issue 18, item 8): whatever the
bytes, a reader returns data or raises its one error type, and what it returns holds."""

from __future__ import annotations

import math
import re
from xml.etree import ElementTree as ET

from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

from migrate.core.display import escape, escape_lines, xml_text
from migrate.core.errors import UsageError
from migrate.core.fileio import SourceError, decode
from migrate.core.inputs import MAX_NODES, load_json, load_yaml

YAML_BITS = st.sampled_from(
    [
        "a",
        "b: 1",
        "- x",
        "&a [1, 2]",
        "*a",
        "&b {k: *a}",
        "[",
        "]",
        "{",
        "}",
        ": ",
        "\n",
        "  ",
        "!!python/object:os.system",
        ".nan",
        "'q'",
        '"\\x00"',
        "? ",
        "--- ",
        "...",
        "%YAML 1.1",
        "<<: *a",
        "\t",
        "#",
        "|",
        ">",
        "\ufeff",
        "\x00",
        "é",
    ]
)


@fuzz(200)
@given(st.binary(max_size=300), st.booleans())
def test_decode_is_exact_or_a_source_error(data, python):
    try:
        source = decode(data, python)
    except SourceError:
        return
    assert "\x00" not in source.text
    if source.exact:
        assert source.bom + source.text.encode(source.encoding) == data


@fuzz(300)
@given(text=st.lists(YAML_BITS, max_size=40).map(" ".join))
def test_yaml_loader_returns_data_or_one_usage_error(text, tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        doc = load_yaml(path, "--gate")
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert doc is None or isinstance(doc, (dict, list, str, int, float, bool, bytes))


def _expanded(node, memo=None) -> int:
    memo = {} if memo is None else memo
    if not isinstance(node, (dict, list)):
        return 1
    if id(node) not in memo:
        kids = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        memo[id(node)] = 1 + sum(_expanded(k, memo) for k in kids)
    return memo[id(node)]


@fuzz(40)
@given(width=st.integers(2, 12), depth=st.integers(2, 12))
def test_alias_bombs_are_refused_before_they_expand(width, depth, tmp_path):
    lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    try:
        doc = load_yaml(path, "--gate")
    except UsageError as exc:
        assert "alias" in str(exc) or "values" in str(exc)
        return
    assert _expanded(doc) <= MAX_NODES


@fuzz(150)
@given(data=st.binary(max_size=200))
def test_json_loader_returns_data_or_one_usage_error(data, tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(data)
    try:
        load_json(path, "manifest", finite=True)
    except UsageError as exc:
        assert "\n" not in str(exc)


def _no_nan(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_no_nan(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_nan(v) for v in value)
    return True


@fuzz(50)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
        max_leaves=20,
    )
)
def test_finite_json_never_holds_nan(value, tmp_path):
    import json

    path = tmp_path / "m.json"
    path.write_text(json.dumps(value))
    try:
        doc = load_json(path, "manifest", finite=True)
    except UsageError:
        assert not _no_nan(value)
        return
    assert _no_nan(doc)


UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@fuzz(300)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60))
def test_escapes_leave_nothing_a_terminal_or_parser_would_act_on(text):
    assert not UNSAFE.search(escape(text))
    lines = escape_lines(text)
    assert lines.count("\n") == text.count("\n")
    assert not UNSAFE.search(lines.replace("\n", ""))
    node = ET.Element("case", name=xml_text(text))
    node.text = xml_text(text)
    back = ET.fromstring(ET.tostring(node, encoding="unicode").encode("utf-8"))
    assert back.get("name") is not None
