"""Markdown PR comment: summary numbers, per-file details, escaping, size cap."""

from __future__ import annotations

from migrate.core.findings import Finding, ScanResult
from migrate.report import render
from migrate.report.markdown import LIMIT


def test_summary_table_and_details(result, rules):
    md = render(result, "markdown", rules)
    assert md.startswith("## ascend-migrate: 6 findings in 2 files")
    for row in ("| auto | 4 |", "| assisted | 1 |", "| manual | 1 |", "| **total** | **6** |"):
        assert row in md
    assert "Files scanned: 3 · errors: 1" in md
    # effort: the 4 auto findings in 2 files are one package (5 + 2 min), the assisted
    # one 15 min, MIG301's own 240 min per file: 262 min
    assert "estimated effort: ~4.4 h" in md
    assert "| MIG301 cuda-extension-build | src/train.py | 1 | 4.0 h |" in md
    assert "4 fixable with `migrate apply`, 1 more with `--unsafe-fixes`." in md
    assert md.count("<details>") == md.count("</details>") == 4
    assert "<summary><code>src/train.py</code>: 5 findings</summary>" in md
    assert "| 19:7 | `MIG301` cuda-extension-build | manual |" in md
    assert "| `MIG101` | torch-cuda-api | auto | 4 |" in md
    assert "<code>src/broken.py</code>: invalid syntax" in md


def test_cells_are_escaped():
    f = Finding(
        rule="MIG101",
        name="torch-cuda-api",
        path="a<b>.py",
        line=1,
        column=1,
        end_line=1,
        end_column=5,
        message="x | y <script>\nz",
        category="auto",
    )
    md = render(ScanResult(findings=[f], files_scanned=1), "markdown", [])
    assert "x \\| y &lt;script&gt; z" in md
    assert "<code>a&lt;b&gt;.py</code>" in md


def test_long_reports_fit_in_a_comment():
    findings = [
        Finding(
            rule="MIG101",
            name="torch-cuda-api",
            path=f"pkg/mod_{i:04d}.py",
            line=j + 1,
            column=5,
            end_line=j + 1,
            end_column=27,
            message="`torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`",
            category="auto",
        )
        for i in range(400)
        for j in range(5)
    ]
    md = render(ScanResult(findings=findings, files_scanned=400), "markdown", [])
    assert len(md) < 65_536 and len(md) > LIMIT // 2
    assert "| auto | 2000 |" in md
    assert "more files not shown" in md


def test_clean_scan_says_so(rules):
    md = render(ScanResult(files_scanned=7), "markdown", rules)
    assert md.startswith("## ascend-migrate: no findings")
    assert "| **total** | **0** | |" in md and "Files scanned: 7 · errors: 0" in md
    assert "<details>" not in md
