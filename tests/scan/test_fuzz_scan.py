"""Property tests for the scan's readers (issue 18, item 8): the Python and text engines, the
comment masks, suppression, the config loader, the cache loader and the span index."""

from __future__ import annotations

import json

from fuzzing import fuzz
from hypothesis import assume, given
from hypothesis import strategies as st

from migrate.commands.apply_output import git_lines
from migrate.core.errors import FileProblem, UsageError
from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text
from migrate.scan.python.spans import SpanIndex
from migrate.scan.text.mask import _MASKERS, mask_comments

RULES = default_rules()
PY_BITS = st.sampled_from(
    [
        "import torch",
        "x = torch.zeros(1)",
        "y = x.cuda()",
        "torch.cuda.synchronize()",
        's = "# migrate: ignore"',
        "# migrate: ignore",
        "# migrate: ignore[MIG202]",
        'f"{x}"',
        'b"\\x00"',
        '"""',
        "'''",
        "if torch.cuda.is_available():",
        "    pass",
        "else:",
        "def f(d='cuda'):",
        "    return d",
        "class C:",
        "try:",
        "    import apex",
        "except ImportError:",
        "torch.device('cuda:0')",
        "\\",
        ";",
        "(",
        ")",
        "\t",
        "\x0c",
        "\u2028",
        "\r",
        "x.to('cuda')",
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
        "é",
        "# coding: latin-1",
    ]
)
TEXT_BITS = st.sampled_from(
    [
        "export CUDA_VISIBLE_DEVICES=0",
        "echo '# migrate: ignore'",
        "# migrate: ignore",
        '"',
        "'",
        "\\",
        "#",
        "RUN pip install torch==2.1.0+cu118",
        "FROM nvidia/cuda:12.1.0-base",
        "torch==2.1.0+cu118",
        "nccl",
        "CUDA_HOME=/usr/local/cuda",
        "  key: value",
        "- item",
        "\t",
        "\r\n",
        "é",
        "\x00",
    ]
)
KINDS = (
    "shell",
    "docker",
    "make",
    "yaml",
    "conda",
    "requirements",
    "pyproject",
    "setup-cfg",
    "cuda",
    "env",
    "cmake",
)
NAMES = {
    "shell": "run.sh",
    "docker": "Dockerfile",
    "make": "Makefile",
    "yaml": "ci.yaml",
    "conda": "environment.yml",
    "requirements": "requirements.txt",
    "pyproject": "pyproject.toml",
    "setup-cfg": "setup.cfg",
    "cuda": "k.cu",
    "env": ".env",
    "cmake": "CMakeLists.txt",
}


def _check(text: str, findings) -> None:
    for f in findings:
        assert 1 <= f.line <= f.end_line and f.column >= 1
        if f.fix:
            assert all(0 <= e.start <= e.end <= len(text) for e in f.fix.edits)


@fuzz(150)
@given(
    lines=st.lists(st.lists(PY_BITS, min_size=1, max_size=4).map(" ".join), max_size=12),
    target=st.sampled_from(["portable", "npu", "transfer"]),
)
def test_python_scan_returns_findings_or_one_file_problem(lines, target):
    text = "\n".join(lines) + "\n"
    try:
        found = scan_text(text, "a.py", "python", RULES, target)
    except FileProblem:
        return
    _check(text, found)


@fuzz(150)
@given(
    lines=st.lists(st.lists(TEXT_BITS, min_size=1, max_size=4).map(" ".join), max_size=10),
    kind=st.sampled_from(KINDS),
)
def test_text_scan_never_raises(lines, kind):
    text = "\n".join(lines) + "\n"
    _check(text, scan_text(text, NAMES[kind], kind, RULES, "npu"))


@fuzz(200)
@given(text=st.text(max_size=120), kind=st.sampled_from(sorted(_MASKERS)))
def test_comment_masks_keep_every_offset(text, kind):
    masked = mask_comments(text, kind)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(text) if c in "\r\n"] == [i for i, c in enumerate(masked) if c in "\r\n"]


SPOOF = st.sampled_from(['"{}"', "'{}'", 'f"{}"', 'b"{}"', '"""{}"""', "r'{}'", 'f"{{x}} {}"'])


@fuzz(80)
@given(quote=SPOOF, codes=st.sampled_from(["", "[MIG202]", "[MIG202,MIG101]", "[]"]), before=st.booleans())
def test_a_suppression_inside_a_literal_silences_nothing(quote, codes, before):
    literal = quote.format("# migrate: ignore" + codes)
    stmt = f"s = {literal}; y = x.cuda()" if before else f"y = x.cuda(); s = {literal}"
    text = f"import torch\nx = torch.zeros(1)\n{stmt}\n"
    found = scan_text(text, "a.py", "python", RULES, "npu")
    assert [f.rule for f in found] == ["MIG202"], stmt


CONFIG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=6),
    st.lists(st.text(max_size=6), max_size=3),
    st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
)
KEYS = [
    "select",
    "extend-select",
    "ignore",
    "exclude",
    "extend-exclude",
    "per-file-ignores",
    "fail-on",
    "unsafe-fixes",
    "respect-gitignore",
    "effort",
    "target",
    "per-path-target",
    "bogus",
]


def _toml(value) -> str:
    if value is None:
        return '""'
    return (
        json.dumps(value)
        if not isinstance(value, dict)
        else "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + "}"
    )


@fuzz(150)
@given(config=st.dictionaries(st.sampled_from(KEYS), CONFIG_VALUES, max_size=4))
def test_config_loader_returns_a_config_or_one_usage_error(config, tmp_path):
    from migrate.scan.session import ScanRequest, run_session

    body = "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in config.items())
    assume("nan" not in body and "inf" not in body.lower())
    (tmp_path / "pyproject.toml").write_text("[tool.migrate]\n" + body)
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    try:
        session = run_session(ScanRequest([tmp_path], jobs=1, no_cache=True))
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert all(r.code.startswith("MIG") for r in session.rules)


@fuzz(100)
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "format",
                        "entries",
                        "a.py",
                        "size",
                        "mtime_ns",
                        "digest",
                        "error",
                        "findings",
                        "mac",
                        "rule",
                        "path",
                        "fix",
                        "edits",
                    ]
                ),
                kids,
                max_size=5,
            )
        ),
        max_leaves=25,
    )
)
def test_cache_loader_never_raises_and_believes_nothing_unsigned(doc, tmp_path, monkeypatch):
    from migrate.scan.cache import FORMAT, ScanCache

    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 32)
    cache = ScanCache.open(tmp_path, tmp_path, ["MIG101"], RULES)
    assert cache.path is not None
    cache.path.write_text(json.dumps({"format": FORMAT, "entries": doc} if isinstance(doc, dict) else doc))
    assert ScanCache.open(tmp_path, tmp_path, ["MIG101"], RULES).entries == {}


@fuzz(200)
@given(
    spans=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=15),
    probes=st.lists(st.integers(-2, 60), max_size=20),
)
def test_span_index_answers_as_a_scan_of_the_list(spans, probes):
    spans = [(a, a + n, i) for i, (a, n) in enumerate(spans)]
    index = SpanIndex(spans)
    for q in probes:
        assert index.at(q) == next((v for a, b, v in spans if a <= q < b), None)


@fuzz(200)
@given(text=st.text(max_size=80))
def test_git_lines_cover_the_text(text):
    lines = git_lines(text)
    assert "".join(lines) == text
    assert all(line.endswith("\n") for line in lines[:-1])
    assert all("\n" not in line[:-1] for line in lines)
