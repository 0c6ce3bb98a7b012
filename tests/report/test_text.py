"""Text report: ruff-like finding lines, excerpts with carets, summary, --statistics."""

from __future__ import annotations

from dataclasses import replace

from migrate.core.findings import Finding, ScanResult
from migrate.report import effort, render
from migrate.report.common import rule_map
from migrate.report.text import underline


def _caret_under(out: str, header: str) -> str:
    """The excerpt line's text above the carets, for the block starting at ``header``."""
    lines = out.splitlines()
    i = lines.index(header)
    source, marks = lines[i + 2], lines[i + 3]
    start = marks.index("^")
    return source[start : start + marks.count("^")]


def test_findings_with_excerpts(result, rules, project):
    out = render(result, "text", rules, root=project, width=120)
    header = (
        "src/train.py:14:5: MIG101 [auto] `torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`"
    )
    assert header in out.splitlines()
    assert _caret_under(out, header) == "torch.cuda.synchronize"
    nccl = (
        "src/train.py:7:37: MIG120 [assisted] process group backend `nccl` is not "
        "available on Ascend; use `hccl`"
    )
    assert _caret_under(out, nccl) == '"nccl"'
    assert "= fix (unsafe): Replace `nccl` with `hccl`" in out
    # util.py's finding has no snippet: the line comes from root/path.
    util = "src/util.py:6:5: MIG101 [auto] `torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`"
    assert _caret_under(out, util) == "torch.cuda.synchronize"
    assert "\x1b[" not in out


def test_summary_numbers(result, rules, project):
    out = render(result, "text", rules, root=project, width=120)
    assert "Found 6 findings in 2 files (3 files scanned, 1 error)." in out
    assert "4 fixable with `migrate apply`, 1 more with `--unsafe-fixes`." in out
    for line in (
        "  auto          4   `migrate apply`",
        "  manual        1   port by hand",
        "  4  MIG101  torch-cuda-api",
        "  1  MIG301  cuda-extension-build",
        "  src/broken.py: invalid syntax (line 1, column 7)",
    ):
        assert line in out.splitlines()
    assert "Effort: ~4.4 h in 3 work packages, a planning figure" in out


def test_effort_uses_rule_override(result, rules):
    est = effort.estimate(result.findings, rule_map(rules))
    # auto: one package for the project, 5 min + 2 min per further file (2 files);
    # assisted: 15 min per symbol and file; MIG301 sets effort: {minutes: 240, per: file}
    assert est.minutes == (5 + 2) + 15 + 240
    assert effort.estimate(result.findings, {}).minutes == (5 + 2) + 15 + 60
    assert effort.format_minutes(45) == "45 min" and effort.format_minutes(90) == "1.5 h"


def test_color_only_when_asked(result, rules, project):
    plain = render(result, "text", rules, root=project, color=False, width=120)
    colored = render(result, "text", rules, root=project, color=True, width=120)
    assert "\x1b[" in colored and "\x1b[" not in plain


def test_clean_scan(rules):
    out = render(ScanResult(files_scanned=12), "text", rules)
    assert out.strip() == "All checks passed! (12 files scanned)"


def test_underline_handles_tabs_and_wide_characters():
    line = "\tname = '数据'; x.cuda()"
    col = line.index("x.cuda") + 1
    f = Finding(
        rule="MIG102",
        name="tensor-cuda-call",
        path="a.py",
        line=1,
        column=col,
        end_line=1,
        end_column=col + len("x.cuda()"),
        message="m",
        category="auto",
    )
    pad, width = underline(line, f)
    shown = line.expandtabs(4)
    # '数据' is two characters but four terminal cells.
    assert pad == len(shown[: shown.index("x.cuda")]) + 2
    assert width == len("x.cuda()")
    multi = Finding(
        rule="MIG102",
        name="n",
        path="a.py",
        line=1,
        column=col,
        end_line=3,
        end_column=2,
        message="m",
        category="auto",
    )
    assert underline(line, multi)[1] == len("x.cuda()")  # to the end of the first line


def test_statistics(result, rules):
    out = render(result, "text", rules, statistics=True)
    assert out.splitlines()[:3] == [
        "4  MIG101  [*] torch-cuda-api",
        "1  MIG120  [-] nccl-backend-string",
        "1  MIG301      cuda-extension-build",
    ]
    assert "[*] fixable with `migrate apply`" in out


def test_statistics_marks_rules_whose_fixer_sometimes_declines(result, rules):
    # A fixer may decline (the finding stays without a fix): the rule is 'partially' fixable.
    result.findings[3] = replace(result.findings[3], fix=None)  # one of the four MIG101 findings
    out = render(result, "text", rules, statistics=True)
    assert out.splitlines()[0] == "4  MIG101  [~] torch-cuda-api"
    assert "[~] some findings fixable" in out
