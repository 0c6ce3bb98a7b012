"""Scanning non-Python files: realistic fixtures, file kinds, fixes, CRLF, rule examples."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from migrate.core.filekinds import TEXT_KINDS
from migrate.core.filekinds import detect as file_kind
from migrate.core.findings import splice
from migrate.core.rules import load_rules
from migrate.scan.text.scanner import scan_text_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "textfiles"
RULES = load_rules()
MY_FILES = ("env_vars.yaml", "shell.yaml", "dependencies.yaml", "cuda_sources.yaml")
MY_RULES = [r for r in RULES if r.source in MY_FILES]


def scan(rel: str, text: str | None = None, rules=RULES, kind: str | None = None):
    if text is None:
        text = (FIXTURES / rel).read_text(encoding="utf-8")
    return scan_text_file(text, rel, kind or file_kind(FIXTURES / rel), rules)


def fixed(text: str, findings, unsafe: bool = False) -> str:
    edits = [e for f in findings if f.fix and (unsafe or f.fix.applicability == "safe") for e in f.fix.edits]
    return splice(text, edits)


EXPECTED = {
    "train_multinode.sh": [
        ("MIG701", 5),
        ("MIG701", 5),
        ("MIG701", 6),
        ("MIG701", 7),
        ("MIG703", 8),
        ("MIG702", 9),
        ("MIG701", 10),
        ("MIG711", 14),
        ("MIG710", 18),
        ("MIG711", 19),
        ("MIG718", 23),
        ("MIG701", 28),
    ],
    "Dockerfile": [
        ("MIG714", 2),
        ("MIG702", 5),
        ("MIG702", 6),
        ("MIG715", 13),
        ("MIG721", 14),
        ("MIG719", 17),
        ("MIG701", 20),
    ],
    "docker-compose.yml": [
        ("MIG714", 3),
        ("MIG713", 4),
        ("MIG701", 6),
        ("MIG703", 7),
        ("MIG713", 16),
    ],
    ".github/workflows/gpu-tests.yml": [
        ("MIG701", 8),
        ("MIG701", 9),
        ("MIG710", 13),
        ("MIG715", 17),
        ("MIG721", 18),
    ],
    "requirements.txt": [
        ("MIG715", 4),
        ("MIG751", 5),
        ("MIG750", 5),
        ("MIG720", 5),
        ("MIG720", 6),
        ("MIG721", 8),
        ("MIG721", 10),
        ("MIG727", 11),
        ("MIG722", 12),
        ("MIG723", 13),
        ("MIG724", 14),
        ("MIG725", 15),
        ("MIG726", 16),
        ("MIG721", 19),
    ],
    "pyproject.toml": [
        ("MIG721", 13),
        ("MIG724", 14),
        ("MIG727", 18),
        ("MIG728", 20),
        ("MIG728", 21),
    ],
    "poetry/pyproject.toml": [("MIG720", 9), ("MIG721", 10), ("MIG724", 15), ("MIG715", 19)],
    "Makefile": [("MIG712", 2), ("MIG702", 3), ("MIG701", 17), ("MIG711", 18)],
    "environment.yml": [
        ("MIG723", 9),
        ("MIG723", 11),
        ("MIG721", 14),
        ("MIG727", 15),
        ("MIG701", 17),
    ],
    "setup.cfg": [("MIG726", 10), ("MIG726", 11), ("MIG725", 17)],
    ".env": [("MIG701", 2), ("MIG702", 3)],
    "kernels/fused_add.cu": [("MIG730", 1)],
}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_fixture_findings(rel):
    findings = scan(rel)
    assert [(f.rule, f.line) for f in findings] == EXPECTED[rel]
    text = (FIXTURES / rel).read_text(encoding="utf-8")
    for f in findings:
        assert f.path == rel
        assert f.snippet == text.splitlines()[f.line - 1]
        assert (f.fix is None) == (f.category == "manual")
        if f.fix:
            assert f.fix.applicability == ("safe" if f.category == "auto" else "unsafe")
            assert f.fix.description and "{" not in f.fix.description
        assert "{" not in f.message


@pytest.mark.parametrize(
    "rel",
    [
        "ascend_ready/Dockerfile",
        "ascend_ready/docker-compose.yml",
        "ascend_ready/run_npu.sh",
        "ascend_ready/requirements-npu.txt",
    ],
)
def test_already_migrated_files_have_no_findings(rel):
    assert file_kind(FIXTURES / rel) is not None
    assert scan(rel) == []


def test_spans_point_at_the_flagged_text():
    text = (FIXTURES / "train_multinode.sh").read_text()
    lines = text.splitlines()
    got = [lines[f.line - 1][f.column - 1 : f.end_column - 1] for f in scan("train_multinode.sh")]
    assert got[:4] == ["CUDA_VISIBLE_DEVICES"] * 2 + ["PYTORCH_CUDA_ALLOC_CONF", "NCCL_SOCKET_IFNAME"]
    assert got[-2:] == ["gpu", "CUDA_LAUNCH_BLOCKING"]


def test_cuda_kernel_message_counts_lines_and_kernels_outside_comments():
    (finding,) = scan("kernels/fused_add.cu")
    assert "(29 lines, 2 __global__ kernels)" in finding.message
    assert finding.fix is None


def test_safe_fixes_of_launch_script():
    text = (FIXTURES / "train_multinode.sh").read_text()
    out = fixed(text, scan("train_multinode.sh", text))
    assert "export ASCEND_RT_VISIBLE_DEVICES=${ASCEND_RT_VISIBLE_DEVICES:-0,1,2,3,4,5,6,7}" in out
    assert "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" in out
    assert "export HCCL_SOCKET_IFNAME=eth0" in out
    assert "ASCEND_LAUNCH_BLOCKING=1 python tools/debug_step.py" in out
    # untouched: comment, suppressed line, unrelated variable, assisted fixes
    assert "# Multi-node launch for the 7B model. Set CUDA_VISIBLE_DEVICES" in out
    assert 'MY_CUDA_VISIBLE_DEVICES_BACKUP="$CUDA_VISIBLE_DEVICES"  # migrate: ignore' in out
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in out
    assert "--nproc_per_node=gpu" in out and "\nnvidia-smi\n" in out


def test_unsafe_fixes_of_requirements_change_only_flagged_text():
    text = (FIXTURES / "requirements.txt").read_text()
    pins = ("MIG750", "MIG751")  # re-pinning torch for torch-npu: tested on their own below
    out = fixed(text, [f for f in scan("requirements.txt", text) if f.rule not in pins], unsafe=True)
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
    assert changed == [
        (
            "--extra-index-url https://wheels.example.com/whl/cu121",
            "--extra-index-url https://wheels.example.com/whl/cpu",
        ),
        ("torch==2.3.1+cu121", "torch==2.3.1+cpu"),
        (
            'torchvision==0.18.1+cu121 ; platform_system == "Linux"',
            'torchvision==0.18.1+cpu ; platform_system == "Linux"',
        ),
    ]


def test_fixing_twice_changes_nothing_more():
    for rel in EXPECTED:
        text = (FIXTURES / rel).read_text()
        once = fixed(text, scan(rel, text), unsafe=True)
        again = scan(rel, once)
        assert all(f.fix is None for f in again), rel


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_crlf_text_gives_same_findings_and_keeps_crlf(rel):
    text = (FIXTURES / rel).read_text()
    crlf = text.replace("\n", "\r\n")
    lf_findings, crlf_findings = scan(rel, text), scan(rel, crlf)
    assert [(f.rule, f.line, f.column, f.end_column) for f in crlf_findings] == [
        (f.rule, f.line, f.column, f.end_column) for f in lf_findings
    ]
    out = fixed(crlf, crlf_findings, unsafe=True)
    assert out == fixed(text, lf_findings, unsafe=True).replace("\n", "\r\n")


def test_every_example_in_my_rule_files_behaves_as_declared():
    checked = 0
    for rule in MY_RULES:
        assert any("before" in e for e in rule.examples), rule.code
        assert any("noop" in e for e in rule.examples), rule.code
        for ex in rule.examples:
            kind = file_kind(PurePath(ex["file"]))
            assert kind in rule.files, (rule.code, ex["file"])
            if kind == "python":
                continue  # the Python engine's (tests/meta/test_rule_examples.py)
            text = ex["noop"] if "noop" in ex else ex["before"]
            mine = [f for f in scan_text_file(text, ex["file"], kind, RULES) if f.rule == rule.code]
            if "noop" in ex:
                assert mine == [], (rule.code, ex)
                continue
            assert mine, (rule.code, ex)
            assert all("{" not in f.message for f in mine), (rule.code, mine[0].message)
            assert all("{" not in f.fix.description for f in mine if f.fix), rule.code
            if "after" in ex:
                assert fixed(text, mine, unsafe=True) == ex["after"], (rule.code, ex)
            else:
                assert all(f.fix is None for f in mine), (rule.code, ex)
            checked += 1
    assert checked >= len(MY_RULES)


def test_my_rule_tables_are_consistent():
    names: dict[str, str] = {}
    for rule in MY_RULES:
        assert set(rule.doc) >= {"what", "why", "example", "fix_safety"}, rule.code
        assert (rule.fix_title is None) == (rule.category == "manual"), rule.code
        assert set(rule.files) <= set(TEXT_KINDS) | {"python"}, rule.code
        for name in rule.params.get("vars") or {}:
            assert name not in names, f"{name} in {names.get(name)} and {rule.code}"
            names[name] = rule.code
        if rule.category != "manual" and rule.kind in ("shell-command", "dependency"):
            assert "replace" in rule.params, rule.code


def test_unsafe_fixes_pin_torch_for_torch_npu():
    text = (FIXTURES / "requirements.txt").read_text()
    found = [f for f in scan("requirements.txt", text) if f.rule in ("MIG750", "MIG751")]
    out = fixed(text, found, unsafe=True)
    assert "torch==2.14.0+cpu\ntorch-npu==2.14.0\n" in out  # the CPU build stays the CPU build
    assert [f.rule for f in scan("requirements.txt", out) if f.rule.startswith("MIG75")] == []
