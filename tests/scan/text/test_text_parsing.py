"""Building blocks of the text-file scanner: comment masking and requirement parsing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.filekinds import TEXT_KINDS
from migrate.core.findings import splice
from migrate.core.rules import load_rules
from migrate.scan.tables.requirements import parse_requirement
from migrate.scan.text.mask import mask_comments
from migrate.scan.text.scanner import scan_text_file

RULES = load_rules()


@pytest.mark.parametrize(
    "kind, line, kept",
    [
        ("shell", "export A=1  # B=2", "export A=1"),
        ("shell", "echo \"# kept\" '#kept' ${#arr[@]} a#b # gone", "echo \"# kept\" '#kept' ${#arr[@]} a#b"),
        ("docker", "   # syntax=docker/dockerfile:1", ""),
        ("docker", "RUN echo hi # gone", "RUN echo hi"),
        ("make", "CFLAGS = -O2# gone", "CFLAGS = -O2"),
        ("make", r"HASH := \#kept # gone", r"HASH := \#kept"),
        ("make", "\techo a#b # gone", "\techo a#b"),
        ("yaml", "key: 'a # kept' # gone", "key: 'a # kept'"),
        ("yaml", "url: http://x/#frag", "url: http://x/#frag"),
        ("yaml", "run: echo don't # gone", "run: echo don't"),
        ("pyproject", 'deps = ["a#b"]# gone', 'deps = ["a#b"]'),
        ("requirements", "pkg @ https://h/p.zip#egg=pkg  # gone", "pkg @ https://h/p.zip#egg=pkg"),
        ("setup-cfg", "; gone", ""),
        ("setup-cfg", "x = a # kept: INI", "x = a # kept: INI"),
        ("cuda", "int a; // kept: cuda kind is not masked", "int a; // kept: cuda kind is not masked"),
    ],
)
def test_mask_comments_blanks_only_comments(kind, line, kept):
    for eol in ("\n", "\r\n", ""):
        masked = mask_comments(line + eol, kind)
        assert len(masked) == len(line + eol)
        assert masked.rstrip() == kept
        assert masked.endswith(eol)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("a #'\"\\;\t\r\n$={}-:")), max_size=120),
    kind=st.sampled_from(TEXT_KINDS),
)
def test_mask_keeps_length_line_breaks_and_non_blank_text(text, kind):
    masked = mask_comments(text, kind)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    assert masked.count("\r\n") == text.count("\r\n")
    assert all(b == a or b == " " for a, b in zip(text, masked, strict=True))


@pytest.mark.parametrize(
    "req, name, spec",
    [
        ("torch==2.1.0+cu121", "torch", "==2.1.0+cu121"),
        ("Flash_Attn[ext] >= 2.5 ; python_version >= '3.9'", "flash-attn", " >= 2.5"),
        (
            "apex @ git+https://github.com/NVIDIA/apex.git",
            "apex",
            " @ git+https://github.com/NVIDIA/apex.git",
        ),
        ("git+https://github.com/NVIDIA/apex.git@master", "apex", None),
        ("git+https://host/x/repo.git#egg=flash_attn", "flash-attn", None),
        ("https://h/flash_attn-2.5.9+cu122torch2.3-cp310-cp310-linux_x86_64.whl", "flash-attn", None),
        ("https://h/bitsandbytes-0.43.0.tar.gz", "bitsandbytes", None),
        ("nvidia::cuda-toolkit=12.1", "cuda-toolkit", "=12.1"),
        ("-e git+https://h/NVIDIA/apex#egg=apex", "apex", None),
        ("pytorch-cuda=12.1", "pytorch-cuda", "=12.1"),
    ],
)
def test_parse_requirement(req, name, spec):
    text = "  " + req + "  "
    parsed = parse_requirement(text, 0, len(text))
    assert parsed is not None and parsed.name == name
    assert text[parsed.start : parsed.end] == req.removeprefix("-e ")
    if spec is not None:
        assert text[parsed.spec_start : parsed.spec_end] == spec


@pytest.mark.parametrize("req", ["", "   ", ".", "./", "[extra]", "==1.0", "https://h/"])
def test_parse_requirement_without_a_name(req):
    assert parse_requirement(req, 0, len(req)) is None


odd_text = st.lists(
    st.sampled_from(
        list("ab #'\"\\$={}[]:;-\t\r\n\x00é")
        + [
            "CUDA_VISIBLE_DEVICES",
            "NCCL_X",
            "pip install ",
            "flash-attn",
            "nvidia-smi",
            "[project]",
            "dependencies = [",
            "+cu121",
            "/whl/cu118",
        ]
    ),
    max_size=80,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=odd_text, kind=st.sampled_from(TEXT_KINDS))
def test_odd_text_never_raises_and_edits_stay_in_bounds(text, kind):
    findings = scan_text_file(text, "x", kind, RULES)
    for f in findings:
        assert 1 <= f.line <= f.end_line
        for e in f.fix.edits if f.fix else []:
            assert 0 <= e.start <= e.end <= len(text)
    splice(text, [e for f in findings if f.fix for e in f.fix.edits])
