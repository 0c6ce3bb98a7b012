"""The report's pictures: bars scaled to the longest of their chart, one segment per part of
the breakdown, on real two-rank Kineto traces."""

from __future__ import annotations

import re

import pytest

from migrate.perf.render import render
from migrate.perf.render.charts import PARTS, rank_rows, stacked_svg, step_rows, text_bar
from migrate.perf.run import PerfRequest, analyze


@pytest.fixture(scope="module")
def two_ranks(profiles):
    gpu = profiles / "gpu"
    return analyze(PerfRequest([gpu / "sampled_rank-0.json.gz", gpu / "sampled_rank-1.json.gz"]))


def test_segments_are_the_breakdown_scaled_to_the_longest_bar(two_ranks):
    rows = step_rows(two_ranks.steps)
    assert len(rows) == len([s for s in two_ranks.steps if s.total_us > 0]) == 4
    svg = stacked_svg(rows, "steps")
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="\d+" width="([\d.]+)" height="14"', svg)]
    assert len(widths) == 3 * len(rows)  # every step has all three parts here
    totals = [sum(widths[3 * k : 3 * k + 3]) for k in range(len(rows))]
    longest = max(sum(p.values()) for _, p in rows)
    for (_, parts), total in zip(rows, totals):
        assert total == pytest.approx(max(totals) * sum(parts.values()) / longest, rel=1e-3)
    first = rows[0][1]
    assert widths[2] / widths[0] == pytest.approx(first["free_us"] / first["computing_us"], rel=1e-2)


def test_markdown_bars_and_html_charts(two_ranks):
    md = render(two_ranks, "markdown")
    bars = [line for line in md.splitlines() if line.startswith("rank ") and "█" in line]
    assert len(bars) == 4 + 2  # each step, then each rank's mean
    html = render(two_ranks, "html")
    assert 'id="step-chart"' in html and 'id="rank-chart"' in html and 'class="op-chart"' in html
    assert [label for label, _ in rank_rows(two_ranks)] == ["rank 0", "rank 1"]


def test_text_bar_lengths():
    parts = {"computing_us": 10.0, "communication_not_overlapped_us": 5.0, "free_us": 25.0}
    bar = text_bar(parts, longest=40.0, width=40)
    assert bar == "█" * 10 + "▓" * 5 + "░" * 25
    assert text_bar(parts, longest=80.0, width=40).count("░") == round(40 * 25 / 80)
    assert {key for key, *_ in PARTS} == set(parts)
