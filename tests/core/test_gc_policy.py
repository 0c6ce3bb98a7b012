"""core/gc_policy: fewer garbage collections only where the tool's code runs alone."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from migrate.core.gc_policy import THRESHOLDS
from migrate.core.rules import default_rules
from migrate.scan.ruleset import RuleSet
from migrate.scan.worker import worker_pool

PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("thresholds", gc.get_threshold()))
sys.argv = ["migrate", *sys.argv[1:]]
from migrate.__main__ import main
main()
"""


CASES = [("scan", True), ("apply", True), ("run", False), ("dump", False)]


@pytest.mark.parametrize(("command", "tuned"), CASES)
def test_the_cli_collects_less_often_only_for_commands_that_run_no_user_code(command, tuned):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command, "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    default = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_threshold())"], capture_output=True, text=True
    ).stdout.strip()
    assert f"thresholds {THRESHOLDS if tuned else default}" in out


def test_scan_workers_collect_less_often_and_the_caller_keeps_its_settings():
    before = gc.get_threshold()
    with worker_pool(RuleSet(default_rules()), jobs=2, work=1000, threshold=1) as workers:
        if workers.pool is None:
            pytest.skip("this platform does not fork")
        assert workers.pool.apply(gc.get_threshold) == THRESHOLDS
    assert gc.get_threshold() == before
