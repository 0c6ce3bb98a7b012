"""Scanning non-Python files: realistic fixtures, no-fire cases, fixes, CRLF, odd input."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from migrate.rules import load_rules, select_rules
from migrate.source.text_common import apply_edits
from migrate.source.textfiles import (
    TEXT_KINDS,
    env_var_table,
    file_kind,
    lookup_env_var,
    scan_text_file,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "textfiles"
RULES = load_rules()
MY_FILES = ("env_vars.yaml", "shell.yaml", "dependencies.yaml", "cuda_sources.yaml")
MY_RULES = [r for r in RULES if r.source in MY_FILES]


def scan(rel: str, text: str | None = None, rules=RULES, kind: str | None = None):
    if text is None:
        text = (FIXTURES / rel).read_text(encoding="utf-8")
    return scan_text_file(text, rel, kind or file_kind(FIXTURES / rel), rules)


def fixed(text: str, findings, unsafe: bool = False) -> str:
    edits = [e for f in findings if f.fix and (unsafe or f.fix.applicability == "safe")
             for e in f.fix.edits]
    return apply_edits(text, edits)


@pytest.mark.parametrize("path, kind", [
    ("scripts/train.sh", "shell"), ("run.bash", "shell"), ("x.zsh", "shell"),
    ("jobs/pretrain.slurm", "shell"), ("job.sbatch", "shell"), (".envrc", "shell"),
    ("Dockerfile", "docker"), ("docker/Dockerfile.gpu", "docker"), ("train.dockerfile", "docker"),
    ("Containerfile", "docker"), ("Makefile", "make"), ("GNUmakefile", "make"),
    ("build/rules.mk", "make"), ("ci.yml", "yaml"), ("k8s/job.yaml", "yaml"),
    ("environment.yml", "conda"), ("requirements.txt", "requirements"),
    ("requirements-dev.txt", "requirements"), ("requirements/base.txt", "requirements"),
    ("requirements/base.in", "requirements"), ("constraints.txt", "requirements"),
    ("pyproject.toml", "pyproject"), ("setup.cfg", "setup-cfg"), ("k.cu", "cuda"),
    ("k.cuh", "cuda"), (".env", "env"), ("prod.env", "env"), ("train.py", None),
    ("model.onnx", None), ("README.md", None), ("Makefile.in", None), ("MANIFEST.in", None),
    ("notes.txt", None),
])
def test_file_kind_by_name(path, kind):
    assert file_kind(PurePath(path)) == kind


def test_file_kind_reads_shebang_of_files_without_suffix(tmp_path):
    (tmp_path / "launch").write_text("#!/usr/bin/env bash\nexport CUDA_VISIBLE_DEVICES=0\n")
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\nprint(1)\n")
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    assert file_kind(tmp_path / "launch") == "shell"
    assert file_kind(tmp_path / "tool") is None
    assert file_kind(tmp_path / "blob") is None
    assert file_kind(tmp_path / "missing") is None


EXPECTED = {
    "train_multinode.sh": [
        ("MIG701", 5), ("MIG701", 5), ("MIG701", 6), ("MIG701", 7), ("MIG703", 8),
        ("MIG702", 9), ("MIG701", 10), ("MIG711", 14), ("MIG710", 18), ("MIG711", 19),
        ("MIG718", 23), ("MIG701", 28),
    ],
    "Dockerfile": [
        ("MIG714", 2), ("MIG702", 5), ("MIG702", 6), ("MIG715", 13), ("MIG721", 14),
        ("MIG719", 17), ("MIG701", 20),
    ],
    "docker-compose.yml": [
        ("MIG714", 3), ("MIG713", 4), ("MIG701", 6), ("MIG703", 7), ("MIG713", 16),
    ],
    ".github/workflows/gpu-tests.yml": [
        ("MIG701", 8), ("MIG701", 9), ("MIG710", 13), ("MIG715", 17), ("MIG721", 18),
    ],
    "requirements.txt": [
        ("MIG715", 4), ("MIG720", 5), ("MIG720", 6), ("MIG721", 8), ("MIG721", 10),
        ("MIG727", 11), ("MIG722", 12), ("MIG723", 13), ("MIG724", 14), ("MIG725", 15),
        ("MIG726", 16), ("MIG721", 19),
    ],
    "pyproject.toml": [
        ("MIG721", 13), ("MIG724", 14), ("MIG727", 18), ("MIG728", 20), ("MIG728", 21),
    ],
    "poetry/pyproject.toml": [("MIG720", 9), ("MIG721", 10), ("MIG724", 15), ("MIG715", 19)],
    "Makefile": [("MIG712", 2), ("MIG702", 3), ("MIG701", 17), ("MIG711", 18)],
    "environment.yml": [
        ("MIG723", 9), ("MIG723", 11), ("MIG721", 14), ("MIG727", 15), ("MIG701", 17),
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


@pytest.mark.parametrize("rel", ["ascend_ready/Dockerfile", "ascend_ready/docker-compose.yml",
                                 "ascend_ready/run_npu.sh", "ascend_ready/requirements-npu.txt"])
def test_already_migrated_files_have_no_findings(rel):
    assert file_kind(FIXTURES / rel) is not None
    assert scan(rel) == []


def test_spans_point_at_the_flagged_text():
    text = (FIXTURES / "train_multinode.sh").read_text()
    lines = text.splitlines()
    got = [lines[f.line - 1][f.column - 1:f.end_column - 1] for f in scan("train_multinode.sh")]
    assert got[:4] == ["CUDA_VISIBLE_DEVICES"] * 2 + ["PYTORCH_CUDA_ALLOC_CONF",
                                                      "NCCL_SOCKET_IFNAME"]
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
    out = fixed(text, scan("requirements.txt", text), unsafe=True)
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines(), strict=True)
               if a != b]
    assert changed == [
        ("--extra-index-url https://wheels.example.com/whl/cu121",
         "--extra-index-url https://wheels.example.com/whl/cpu"),
        ("torch==2.3.1+cu121", "torch==2.3.1+cpu"),
        ('torchvision==0.18.1+cu121 ; platform_system == "Linux"',
         'torchvision==0.18.1+cpu ; platform_system == "Linux"'),
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
    assert [(f.rule, f.line, f.column, f.end_column) for f in crlf_findings] == \
        [(f.rule, f.line, f.column, f.end_column) for f in lf_findings]
    out = fixed(crlf, crlf_findings, unsafe=True)
    assert out == fixed(text, lf_findings, unsafe=True).replace("\n", "\r\n")


@pytest.mark.parametrize("rel, text", [
    ("run.sh", "# export CUDA_VISIBLE_DEVICES=0\necho done  # NCCL_DEBUG=INFO\n"),
    ("run.sh", "export MY_CUDA_VISIBLE_DEVICES_BACKUP=1 CUDA_VISIBLE_DEVICESX=2\n"),
    ("run.sh", "echo barracuda cudaMalloc nvidia-smi-exporter my_nvcc\n"),
    ("run.sh", "export CUDA_DEVICE_MAX_CONNECTIONS=1 HCCL_CONNECT_TIMEOUT=600\n"),
    ("run.sh", 'NCCL_VERSION=2.21.5 ./install_nccl.sh\necho "parsed from nvidia-smi (\\"$X\\")"\n'),
    ("ci.yml", "env:\n  # CUDA_VISIBLE_DEVICES: '0'\n  NAME: a  # CUDA_HOME\n"),
    ("Dockerfile", "# FROM nvidia/cuda:12.1.0-base\nFROM python:3.11-slim\n"),
    ("requirements.txt", "flash-attn-helper==1.0\ncudatext\n-r flash-attn.txt\n"),
    ("requirements.txt", "# flash-attn\nmy-triton-utils\nxformers-stubs==0.1\n"),
    ("pyproject.toml", '[project]\nname = "x"\nkeywords = ["triton", "flash-attn"]\n'),
    ("pyproject.toml", '[tool.other]\ndependencies = ["flash-attn"]\n'),
    ("Makefile", "# nvcc -c k.cu\nCFLAGS = -O2 # CUDA_HOME is unused\n"),
    ("environment.yml", "channels:\n  - nvidia\ndependencies:\n  - python=3.10\n"),
])
def test_no_finding(rel, text):
    assert scan(rel, text) == []


@pytest.mark.parametrize("rel, text", [
    ("ci.yml", "env:\n  NAME: 'a # CUDA_HOME'\n"),
    ("run.sh", 'echo "# not a comment: $CUDA_HOME"\n'),
    ("Makefile", "all:\n\techo '#' ${CUDA_HOME}\n"),
    ("pyproject.toml", '[tool.x]\nenv = "#CUDA_HOME"\n'),
])
def test_hash_inside_quotes_is_not_a_comment(rel, text):
    assert [f.rule for f in scan(rel, text)] == ["MIG702"]


def test_suppression_comment_by_code_and_bare():
    text = ("export CUDA_VISIBLE_DEVICES=0  # migrate: ignore[MIG701]\n"
            "export NCCL_DEBUG=INFO  # migrate: ignore\n"
            "export NCCL_IB_HCA=mlx5  # migrate: ignore[MIG701]\n")
    assert [(f.rule, f.line) for f in scan("run.sh", text)] == [("MIG703", 3)]


def test_pip_install_arguments_are_parsed_like_pip():
    text = ("pip install -r flash-attn.txt -c xformers.txt --index-url https://h/simple \\\n"
            "    'bitsandbytes>=0.43' triton==2.1 -e git+https://github.com/NVIDIA/apex#egg=apex"
            " && echo flash-attn\n")
    assert [(f.rule, f.line) for f in scan("run.sh", text)] == [
        ("MIG727", 2), ("MIG725", 2), ("MIG722", 2)]


def test_docker_run_continuation_skips_comment_lines_like_docker():
    text = ("RUN pip install --no-cache-dir \\\n"
            "    # attention kernels\n"
            "    flash-attn==2.5.9 \\\n"
            "    numpy\n"
            "RUN echo xformers\n")
    assert [(f.rule, f.line) for f in scan("Dockerfile", text)] == [("MIG721", 3)]


def test_hashed_requirements_with_continuations():
    text = ("torch==2.1.0+cu121 \\\n"
            "    --hash=sha256:0123abcd\n"
            "triton==2.1.0 \\\n"
            "    --hash=sha256:4567ef00\n")
    findings = scan("requirements.txt", text)
    assert [(f.rule, f.line) for f in findings] == [("MIG720", 1), ("MIG725", 3)]
    assert findings[1].end_column == len("triton==2.1.0") + 1


@pytest.mark.parametrize("value, fixable", [
    ("0,1,2,3", True), ("3,2,1,0", False), ('"4,5"', True), ("1, 0", False), ("2", True),
])
def test_visible_devices_must_be_ascending_to_be_renamed(value, fixable):
    (finding,) = scan("run.sh", f"export CUDA_VISIBLE_DEVICES={value}\n")
    assert (finding.fix is not None) == fixable
    assert ("not ascending" in finding.message) != fixable


@pytest.mark.parametrize("rel, line", [
    ("Makefile", "deps:\n\t$(PIP) install -U xformers\n"),
    ("run.sh", "uv add --group gpu xformers\n"),
    ("run.sh", "poetry add -G dev xformers@^0.0.26\n"),
    ("run.sh", "python3.10 -m pip install --user xformers\n"),
    ("ci.yml", "steps:\n  - run: mamba install -y -c conda-forge xformers\n"),
])
def test_install_commands(rel, line):
    assert [f.rule for f in scan(rel, line)] == ["MIG721"]


def test_env_var_table_for_the_python_engine():
    table = env_var_table(RULES)
    rule, replacement, note = table["CUDA_VISIBLE_DEVICES"]
    assert (rule.code, replacement) == ("MIG701", "ASCEND_RT_VISIBLE_DEVICES")
    assert "ascending" in note
    assert table["NCCL_DEBUG"][0].code == "MIG702" and table["NCCL_DEBUG"][1] is None
    assert lookup_env_var("NCCL_DEBUG", table)[0].code == "MIG702"  # exact beats prefix
    assert lookup_env_var("NCCL_IB_HCA", table)[0].code == "MIG703"
    assert lookup_env_var("TORCH_NCCL_ENABLE_TIMING", table)[0].code == "MIG703"
    assert lookup_env_var("NCCL_", table) is None
    assert lookup_env_var("HOME", table) is None
    assert all("python" in r.files for r in RULES if r.kind == "env-var")


def test_ignoring_a_rule_does_not_hand_its_names_to_a_prefix_rule():
    rules = select_rules(RULES, None, ["MIG701"])
    text = "export NCCL_SOCKET_IFNAME=eth0 NCCL_IB_HCA=mlx5\n"
    assert [(f.rule, f.column) for f in scan("run.sh", text, rules)] == [("MIG703", 32)]


def test_rules_apply_only_to_their_file_kinds():
    text = "export CUDA_VISIBLE_DEVICES=0\nflash-attn\n"
    assert scan("k.cu", text, kind="cuda")[0].rule == "MIG730"
    assert scan("train.py", text, kind="python") == []
    assert [f.rule for f in scan("requirements.txt", text)] == ["MIG721"]


def test_every_example_in_my_rule_files_behaves_as_declared():
    checked = 0
    for rule in MY_RULES:
        assert any("before" in e for e in rule.examples), rule.code
        assert any("noop" in e for e in rule.examples), rule.code
        for ex in rule.examples:
            kind = file_kind(PurePath(ex["file"]))
            assert kind in rule.files, (rule.code, ex["file"])
            text = ex["noop"] if "noop" in ex else ex["before"]
            mine = [f for f in scan_text_file(text, ex["file"], kind, RULES)
                    if f.rule == rule.code]
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
        for name in (rule.params.get("vars") or {}):
            assert name not in names, f"{name} in {names.get(name)} and {rule.code}"
            names[name] = rule.code
        if rule.category != "manual" and rule.kind in ("shell-command", "dependency"):
            assert "replace" in rule.params, rule.code


def test_huge_line_is_scanned_and_its_snippet_is_a_window():
    text = "export A=" + "x" * 2_000_000 + " CUDA_VISIBLE_DEVICES=0  # migrate: ignore[MIG999]\n"
    (finding,) = scan("run.sh", text)
    assert finding.column == 2_000_011
    assert "CUDA_VISIBLE_DEVICES=0" in finding.snippet and len(finding.snippet) <= 400
    assert scan("run.sh", text.replace("MIG999", "MIG701")) == []


def test_many_findings_on_one_long_line():
    text = "pip install " + "flash-attn " * 5000 + "\n"
    findings = scan("run.sh", text)
    assert len(findings) == 5000
    assert [f.column for f in findings[:2]] == [13, 24]


def test_kernel_count_ignores_comments_and_unclosed_comments():
    text = "*/ /* __global__ */ __global__ void a(){} // __global__\n/* __global__ void b(){}\n"
    (finding,) = scan("k.cu", text)
    assert "(2 lines, 1 __global__ kernels)" in finding.message
    assert scan("k.cu", "/* only a comment\n__global__ void k() {}\n") == []
