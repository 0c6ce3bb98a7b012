"""core/own_process: fewer garbage collections and no teardown only where the tool's code
runs alone; exit statuses and output as sys.exit gives them."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from migrate.core.own_process import THRESHOLDS
from migrate.core.rules import default_rules
from migrate.scan.ruleset import RuleSet
from migrate.scan.worker import worker_pool

PROBE = """
import atexit, gc, sys
from migrate.core import own_process
hard_exit = own_process.hard_exit
def report(code):
    print("thresholds", gc.get_threshold(), "hard exit")
    hard_exit(code)
own_process.hard_exit = report
atexit.register(lambda: print("thresholds", gc.get_threshold()))
sys.argv = ["migrate", *sys.argv[1:]]
from migrate.__main__ import main
main()
"""


CASES = [("scan", True), ("apply", True), ("run", False), ("dump", False)]


@pytest.mark.parametrize(("command", "tuned"), CASES)
def test_the_cli_collects_less_often_only_for_commands_that_run_no_user_code(command, tuned):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command, "--help"], capture_output=True, text=True, timeout=900
    ).stdout
    default = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_threshold())"], capture_output=True, text=True
    ).stdout.strip()
    assert f"thresholds {THRESHOLDS if tuned else default}" in out
    assert ("hard exit" in out) == tuned  # no teardown for the tool's own commands


def test_scan_workers_collect_less_often_and_the_caller_keeps_its_settings():
    before = gc.get_threshold()
    with worker_pool(RuleSet(default_rules()), jobs=2, work=1000, threshold=1) as workers:
        if workers.pool is None:
            pytest.skip("this platform does not fork")
        assert workers.pool.apply(gc.get_threshold) == THRESHOLDS
    assert gc.get_threshold() == before


@pytest.mark.parametrize(
    ("args", "status", "stdout", "stderr"),
    [
        (["scan", "{tree}", "--format", "json"], 1, '"rule": "MIG', ""),
        (["scan", "{tree}", "--exit-zero", "--format", "json"], 0, '"rule": "MIG', ""),
        (["scan", "--no-such-option"], 2, "", "No such option"),
        (["apply", "{tree}", "--diff"], 1, "+++ ", ""),
    ],
)
def test_hard_exit_keeps_the_status_and_every_byte_of_output(tmp_path, args, status, stdout, stderr):
    (tmp_path / "train.py").write_text("import torch\n" + "x = torch.zeros(3).cuda()\n" * 3000)
    argv = [a.replace("{tree}", str(tmp_path)) for a in args]
    env = {**os.environ, "MIGRATE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "migrate", *argv], capture_output=True, text=True, env=env)
    assert done.returncode == status, done.stderr
    assert stdout in done.stdout and stderr in done.stderr
    if "json" in argv:
        assert json.loads(done.stdout)["findings"]  # the whole report, not a cut-off one
