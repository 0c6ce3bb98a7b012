"""Text-file rules on short inline snippets: no-fire cases, comments, suppression, install
lines, long lines and the env-var table the Python engine shares."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from migrate.core.filekinds import detect as file_kind
from migrate.core.rules import load_rules, select_rules
from migrate.scan.tables.env_vars import env_var_table, lookup_env_var
from migrate.scan.text.scanner import scan_text_file

RULES = load_rules()


def scan(rel: str, text: str, rules=RULES, kind: str | None = None):
    return scan_text_file(text, rel, kind or file_kind(PurePath(rel)), rules)


@pytest.mark.parametrize(
    "rel, text",
    [
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
    ],
)
def test_no_finding(rel, text):
    assert scan(rel, text) == []


@pytest.mark.parametrize(
    "rel, text",
    [
        ("ci.yml", "env:\n  NAME: 'a # CUDA_HOME'\n"),
        ("run.sh", 'echo "# not a comment: $CUDA_HOME"\n'),
        ("Makefile", "all:\n\techo '#' ${CUDA_HOME}\n"),
        ("pyproject.toml", '[tool.x]\nenv = "#CUDA_HOME"\n'),
    ],
)
def test_hash_inside_quotes_is_not_a_comment(rel, text):
    assert [f.rule for f in scan(rel, text)] == ["MIG702"]


def test_suppression_comment_by_code_and_bare():
    text = (
        "export CUDA_VISIBLE_DEVICES=0  # migrate: ignore[MIG701]\n"
        "export NCCL_DEBUG=INFO  # migrate: ignore\n"
        "export NCCL_IB_HCA=mlx5  # migrate: ignore[MIG701]\n"
    )
    assert [(f.rule, f.line) for f in scan("run.sh", text)] == [("MIG703", 3)]


def test_pip_install_arguments_are_parsed_like_pip():
    text = (
        "pip install -r flash-attn.txt -c xformers.txt --index-url https://h/simple \\\n"
        "    'bitsandbytes>=0.43' triton==2.1 -e git+https://github.com/NVIDIA/apex#egg=apex"
        " && echo flash-attn\n"
    )
    assert [(f.rule, f.line) for f in scan("run.sh", text)] == [("MIG727", 2), ("MIG725", 2), ("MIG722", 2)]


def test_docker_run_continuation_skips_comment_lines_like_docker():
    text = (
        "RUN pip install --no-cache-dir \\\n"
        "    # attention kernels\n"
        "    flash-attn==2.5.9 \\\n"
        "    numpy\n"
        "RUN echo xformers\n"
    )
    assert [(f.rule, f.line) for f in scan("Dockerfile", text)] == [("MIG721", 3)]


def test_hashed_requirements_with_continuations():
    text = "torch==2.1.0+cu121 \\\n    --hash=sha256:0123abcd\ntriton==2.1.0 \\\n    --hash=sha256:4567ef00\n"
    findings = scan("requirements.txt", text)
    assert [(f.rule, f.line) for f in findings] == [
        ("MIG751", 1),
        ("MIG750", 1),
        ("MIG720", 1),
        ("MIG725", 3),
    ]
    assert findings[0].fix is None  # no line of its own after a continued requirement
    assert findings[3].end_column == len("triton==2.1.0") + 1


@pytest.mark.parametrize(
    "value, fixable",
    [
        ("0,1,2,3", True),
        ("3,2,1,0", False),
        ('"4,5"', True),
        ("1, 0", False),
        ("2", True),
    ],
)
def test_visible_devices_must_be_ascending_to_be_renamed(value, fixable):
    (finding,) = scan("run.sh", f"export CUDA_VISIBLE_DEVICES={value}\n")
    assert (finding.fix is not None) == fixable
    assert ("not ascending" in finding.message) != fixable


@pytest.mark.parametrize(
    "rel, line",
    [
        ("Makefile", "deps:\n\t$(PIP) install -U xformers\n"),
        ("run.sh", "uv add --group gpu xformers\n"),
        ("run.sh", "poetry add -G dev xformers@^0.0.26\n"),
        ("run.sh", "python3.10 -m pip install --user xformers\n"),
        ("ci.yml", "steps:\n  - run: mamba install -y -c conda-forge xformers\n"),
    ],
)
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
