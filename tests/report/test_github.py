"""GitHub workflow annotations: format, levels and the toolkit's escaping rules."""

from __future__ import annotations

from migrate.core.findings import FileError, Finding, ScanResult
from migrate.report import render
from migrate.report.github import escape_data, escape_property


def _unescape(value: str) -> str:
    for code, char in (("%2C", ","), ("%3A", ":"), ("%0A", "\n"), ("%0D", "\r"), ("%25", "%")):
        value = value.replace(code, char)
    return value


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    """Split an annotation the way the runner does: '::kind props::message'."""
    assert line.startswith("::")
    head, message = line[2:].split("::", 1)
    kind, _, props = head.partition(" ")
    pairs = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return kind, {k: _unescape(v) for k, v in pairs.items()}, _unescape(message)


def test_annotations_for_a_scan(result, rules):
    lines = render(result, "github", rules).splitlines()
    assert len(lines) == 7
    kind, props, message = _parse(lines[0])
    assert kind == "warning"  # assisted
    assert props == {
        "file": "src/train.py",
        "line": "7",
        "col": "37",
        "endLine": "7",
        "endColumn": "43",
        "title": "MIG120 nccl-backend-string",
    }
    assert message == "process group backend `nccl` is not available on Ascend; use `hccl`"
    kinds = [_parse(x)[0] for x in lines]
    # levels follow impact: MIG120 behaviour -> warning, MIG101/MIG301 crash -> error
    assert kinds == ["warning", "error", "error", "error", "error", "error", "error"]
    assert _parse(lines[-1])[1]["file"] == "src/broken.py"


def test_escaping_follows_the_actions_toolkit():
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    # Escaping '%' first: a literal '%0A' in the text must not turn into a newline.
    assert escape_data("%0A") == "%250A" and _unescape(escape_data("%0A")) == "%0A"


def test_special_characters_round_trip_and_multiline_findings():
    odd = Finding(
        rule="MIG101",
        name="torch-cuda-api",
        path="a,b/c:d%.py",
        line=4,
        column=2,
        end_line=6,
        end_column=3,
        message="50% slower:\nsee a,b\r\nnow",
        category="manual",
    )
    out = render(ScanResult(findings=[odd], errors=[FileError("x,y.py", "bad: utf-8\n")]), "github", [])
    lines = out.splitlines()
    assert len(lines) == 2  # newlines in messages never break an annotation in two
    kind, props, message = _parse(lines[0])
    assert kind == "error"
    # Multi-line finding: no col/endColumn (the toolkit rejects them across lines).
    assert props == {"file": "a,b/c:d%.py", "line": "4", "endLine": "6", "title": "MIG101 torch-cuda-api"}
    assert message == "50% slower:\nsee a,b\r\nnow"
    assert "a%2Cb/c%3Ad%25.py" in lines[0]
    assert _parse(lines[1])[1]["file"] == "x,y.py" and _parse(lines[1])[2] == "bad: utf-8\n"
