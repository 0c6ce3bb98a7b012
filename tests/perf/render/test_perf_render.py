"""The Markdown and HTML reports: every section of a real profile's report, and names from a
hostile profile that cannot break a table, inject HTML or move the terminal cursor."""

from __future__ import annotations

import json

from migrate.perf.model import Finding, OpRow, ProfileInfo, RankResult, Report, StepBreakdown
from migrate.perf.render import FORMATS, render
from migrate.perf.run import PerfRequest, analyze

EVIL = "Mat|Mul<script>alert(1)</script>\x1b[2J"


def _hostile() -> Report:
    profile = ProfileInfo("prof/" + EVIL, "ascend", "npu", [0], EVIL)
    step = StepBreakdown(0, 1, 100.0, 40.0, 10.0, 50.0, source="overlap tracks")
    op = OpRow(0, EVIL, EVIL, "AI_CORE", 3, 40.0, 1.0)
    finding = Finding("PERF101", "aicpu-operator", "compute", EVIL, {}, EVIL, 10.0, [EVIL + ":3"], 0)
    rank = RankResult(profile, 0, [step], [op], [finding], [EVIL])
    return Report([profile], [rank], [finding], notes=[EVIL])


def test_every_format_renders_a_real_report_with_compare_and_mfu(profiles):
    npu = profiles / "ascend" / "timeline_ascend_pt"
    gpu = profiles / "gpu" / "alexnet_a100_trace.json.gz"
    report = analyze(PerfRequest([npu], ref=[gpu], flops=1e12, chip="Ascend910B3", fail_on={"free": 0.5}))
    out = {fmt: render(report, fmt) for fmt in FORMATS}
    assert json.loads(out["json"])["compare"]["step_ratio"] == report.compare["step_ratio"]
    for fmt in ("text", "markdown", "html"):
        assert "84.1%" in out[fmt]  # the step's free share
        assert "PERF101" in out[fmt] and "aten::convolution_backward" in out[fmt]
        assert "Ascend910B" in out[fmt] and "354" in out[fmt]  # MFU's chip and peak
        assert "free share 0.841 &gt; 0.5" in out[fmt] or "free share 0.841 > 0.5" in out[fmt]
    assert "| aten::convolution_backward" not in out["markdown"]  # names are code spans in cells
    assert out["html"].startswith("<!DOCTYPE html>") and '<table id="compare-ops">' in out["html"]


def test_hostile_names_are_escaped():
    report = _hostile()
    md = render(report, "markdown")
    html = render(report, "html")
    text = render(report, "text")
    for out in (md, html, text):
        assert "\x1b" not in out and "\\x1b" in out
        assert "<script>" not in out or out is text
    table_rows = [line for line in md.splitlines() if line.startswith("| 0 |")]
    assert table_rows and all(line.count(" | ") == 6 for line in table_rows)  # no extra column from a '|'
    assert "&lt;script&gt;" in html and "&lt;script&gt;" in md
