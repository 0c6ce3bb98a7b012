"""`migrate perf` from the command line: formats, the gate's exit codes, and bad input as
one line and exit 2."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))
from hostile import main  # noqa: E402
from perf_data import profiles_dir  # noqa: E402  (tests/perf/perf_data.py)

PROFILES = profiles_dir()
needs_profiles = pytest.mark.skipif(PROFILES is None, reason="../shared/data/profiles not found")


@needs_profiles
def test_json_is_the_contract_shape(capsys):
    code, out, _ = main(capsys, "perf", str(PROFILES / "ascend" / "timeline_ascend_pt"), "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert set(doc) >= {"profiles", "steps", "top_ops", "findings", "mfu", "compare"}
    assert doc["profiles"][0]["kind"] == "ascend"
    step = doc["steps"][0]
    assert set(step) >= {
        "rank",
        "step",
        "total_us",
        "computing_us",
        "communication_not_overlapped_us",
        "free_us",
    }
    f = doc["findings"][0]
    assert set(f) >= {"id", "kind", "message", "evidence", "fix", "saving_us", "locations"}


@needs_profiles
def test_the_gate_fails_on_what_it_was_given(capsys):
    path = str(PROFILES / "ascend" / "timeline_ascend_pt")
    code, out, _ = main(capsys, "perf", path, "--fail-on", "free=0.5")
    assert code == 1 and "FAIL rank" not in out and "free share 0.841 > 0.5" in out
    code, out, _ = main(capsys, "perf", path, "--fail-on", "free=0.9", "--fail-on", "exposed=0.1")
    assert code == 0 and "PASS" in out
    code, out, _ = main(capsys, "perf", path, "--fail-on", "PERF202")
    assert code == 1 and "PERF202 host-syncs" in out
    code, out, _ = main(capsys, "perf", path, "--fail-on", "cluster")
    assert code == 0


@needs_profiles
@pytest.mark.parametrize(
    "args, says",
    [
        (["--fail-on", "mfu=0.3"], "MFU needs --model"),
        (["--fail-on", "regression=0.1"], "needs --ref"),
        (["--fail-on", "speed=3"], "unknown condition"),
        (["--fail-on", "free=lots"], "must be a number"),
        (["--format", "xml"], "--format must be one of"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--flops", "1e12", "--chip", "Voodoo5"], "not in the chip table"),
        (["--flops", "1e12", "--dtype", "fp13"], "not a compute dtype"),
        (["--model", "no_such_module_here:make"], "cannot import no_such_module_here"),
    ],
)
def test_bad_options_are_one_line_exit_2(capsys, args, says):
    code, out, err = main(capsys, "perf", str(PROFILES / "ascend" / "timeline_ascend_pt"), *args)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_a_folder_without_a_profile_says_what_it_looked_for(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    code, _, err = main(capsys, "perf", str(tmp_path))
    assert code == 2 and "no profile found (looked for *_ascend_pt folders" in err


def test_a_broken_trace_names_the_file(capsys, tmp_path):
    out = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text('[{"ph": "X", "name": "a", "ts": "1", "dur": 1}, {"ph":')
    code, _, err = main(capsys, "perf", str(tmp_path))
    assert code == 2
    assert "trace_view.json: cut short" in err and len(err.strip().splitlines()) == 1


def test_a_fifo_is_refused_without_waiting(capsys, tmp_path):
    fifo = tmp_path / "rank0.pt.trace.json"
    os.mkfifo(fifo)
    code, _, err = main(capsys, "perf", str(fifo))
    assert code == 2 and "not a regular file" in err


def test_output_never_overwrites_an_input(capsys, tmp_path):
    trace = tmp_path / "t.pt.trace.json"
    trace.write_text(json.dumps({"traceEvents": []}))
    code, _, err = main(capsys, "perf", str(trace), "-o", str(trace))
    assert code == 2 and "is an input of this command" in err


def test_a_trace_with_no_events_is_reported_as_empty_not_an_error(capsys, tmp_path):
    trace = tmp_path / "t.pt.trace.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": []}))
    code, out, _ = main(capsys, "perf", str(trace))
    assert code == 0 and "no findings" in out


@needs_profiles
def test_ref_and_flops_give_compare_and_mfu_on_both_sides(capsys):
    npu = str(PROFILES / "ascend" / "timeline_ascend_pt")
    gpu = str(PROFILES / "gpu" / "alexnet_a100_trace.json.gz")
    args = ["perf", npu, "--ref", gpu, "--flops", "1e12", "--chip", "Ascend910B3", "--format", "json"]
    code, out, _ = main(capsys, *args, "--fail-on", "regression=0.1")
    doc = json.loads(out)
    assert code == 0  # 11.3 ms against the reference's 12.9 s window: not a regression
    assert doc["mfu"]["chip"] == "Ascend910B" and doc["compare"]["ref_mfu"]["chip"] == "A100"
    assert doc["compare"]["step_ratio"] < 0.01
    code, out, _ = main(capsys, "perf", gpu, "--ref", npu, "--fail-on", "regression=0.1")
    assert code == 1 and "slower than the reference" in out
