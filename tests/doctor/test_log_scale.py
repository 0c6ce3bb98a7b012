"""`doctor --log` on hostile logs (issue 18 leftovers): a log with 800k error codes took
56 s and more. Each line is now matched once over the union of its trigger windows, a line
seen before reuses its findings, and the text report explains the first findings in full
and summarises the rest. Linearity is shown by counting matcher calls, never by timing
(benchmarks/bench_robust.py measures the speed)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.doctor import logscan as explain
from migrate.doctor.logscan import scan_logs


@pytest.fixture
def matcher_calls(monkeypatch):
    calls = []
    real = explain.find_in_line

    def spy(line, *args):
        calls.append(len(line))
        return real(line, *args)

    monkeypatch.setattr(explain, "find_in_line", spy)
    return calls


def test_one_line_with_thousands_of_codes_is_matched_once(tmp_path, matcher_calls):
    n = 20_000
    log = tmp_path / "one.log"
    log.write_text(" ".join(f"EZ{i % 10_000:04d}" for i in range(n)) + " ret=507011\n")
    scan = scan_logs([str(log)])
    assert len(matcher_calls) == 1  # was one window per code: 20,000 overlapping windows
    keys = {f.key for f in scan.findings}
    assert {"EZ1001", "EZ9999", "507011"} <= keys
    assert all(f.line == 1 and f.count == 1 for f in scan.findings)
    shown = {f.key: f.text for f in scan.findings}
    assert "EZ9999" in shown["EZ9999"] and len(shown["EZ9999"]) <= explain.SHOWN


def test_repeated_lines_are_counted_not_matched_again(tmp_path, matcher_calls):
    log = tmp_path / "same.log"
    log.write_text("[ERROR] EZ9999 ret=507011 aclError ERR00100 PTA\n" * 5000 + "EE1001 boom\n")
    scan = scan_logs([str(log)])
    assert len(matcher_calls) == 2
    counts = {f.key: (f.line, f.count) for f in scan.findings}
    assert counts["EZ9999"] == (1, 5000) and counts["507011"] == (1, 5000)
    assert counts["EE1001"] == (5001, 1)


def test_a_line_longer_than_a_read_counts_once(tmp_path, monkeypatch):
    monkeypatch.setattr(explain, "CHUNK", 4096)
    log = tmp_path / "long.log"
    log.write_text("EZ9999 " + "x" * 10_000 + " EZ9999 EE1001\nEZ9999\n")
    counts = {f.key: (f.line, f.count) for f in scan_logs([str(log)]).findings}
    assert counts == {"EZ9999": (1, 2), "EE1001": (1, 1)}


def test_text_report_explains_the_first_findings_and_summarises_the_rest(tmp_path):
    from migrate.commands.doctor import DETAILED

    log = tmp_path / "many.log"
    log.write_text(
        "".join(f"x ERR{i % 100:02d}{i % 1000:03d} PTA fail EZ{i:04d}: boom\n" for i in range(400))
    )
    result = CliRunner().invoke(app, ["doctor", "--log", str(log)], catch_exceptions=False)
    assert result.exit_code == 1
    out = result.stdout
    assert out.count("    meaning: ") + out.count(": not in the table") <= DETAILED
    # 800 distinct codes: 500 kept (DETAILED explained, the rest named), 300 counted
    assert f"... and {explain.MAX_FINDINGS - DETAILED} more finding(s)" in out
    assert "300 more line(s) held codes beyond the first 500 distinct ones" in out
    result = CliRunner().invoke(
        app, ["doctor", "--log", str(log), "--format", "json"], catch_exceptions=False
    )
    doc = json.loads(result.stdout)
    assert len(doc["findings"]) == explain.MAX_FINDINGS and doc["dropped"] > 0
