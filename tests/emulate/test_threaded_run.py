"""Work in threads on the emulated NPU: a ``threading.Thread`` worker's training step and a
ThreadPoolExecutor's evaluations are counted, attributed to their threads (their backward,
run by autograd's own thread, to the thread that called it), with their float64 uses and
host syncs; ``migrate ops --torch`` sees a model's worker-thread branch."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
migrate = partial(run_migrate, cwd=HERE)


def _emulate(tmp_path: Path, code: str) -> tuple[dict, dict, str]:
    report = tmp_path / "report.json"
    out = tmp_path / "out.json"
    run = migrate("run", "--emulate", "npu", "--report", str(report), "--", "python", "-c", code, str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text()), json.loads(report.read_text()), run.stderr


def test_worker_threads_ops_dtypes_and_syncs_are_counted_per_thread(tmp_path):
    import threaded_model

    code = "import json, sys, threaded_model; json.dump(threaded_model.run('npu'), open(sys.argv[1], 'w'))"
    got, report, stderr = _emulate(tmp_path, code)
    want = threaded_model.run("cpu")
    for key in ("losses", "evals", "double"):
        assert got[key] == pytest.approx(want[key], rel=1e-6)
    # the same training step in the main thread: what the worker must be credited with
    main_only = (
        "import json, sys, threaded_model as t; d = {}; t._train('npu', d); "
        "json.dump(d, open(sys.argv[1], 'w'))"
    )
    _, alone, _ = _emulate(tmp_path, main_only)
    assert alone["threads"] == {} and alone["summary"]["npu_ops"] > 50
    threads = report["threads"]
    assert threads["trainer"] == alone["summary"]["npu_ops"]
    assert set(threads) == {"trainer", "evaluator_0", "evaluator_1"}
    assert report["summary"]["npu_ops"] == sum(threads.values())  # the main thread ran none
    rows = report["findings"]
    float64 = {r["op"] for r in rows if r["kind"] == "dtype" and r["dtype"] == "float64"}
    assert "aten::sum" in float64 and all(r["thread"] == "trainer" for r in rows if r["kind"] == "dtype")
    syncs = {(r["thread"], r["site"]): r["count"] for r in rows if r["kind"] == "host_sync"}
    assert syncs[("trainer", _line("losses.append(loss.item())"))] == 3  # loss.item() per step
    assert syncs[("evaluator_0", _line("return float(value.item())"))] == 1
    assert "(thread trainer)" in stderr and "threads other than the main one: " in stderr


def test_ops_torch_captures_a_branch_run_in_a_worker_thread():
    run = migrate("ops", "--torch", "threaded_model:build", "--train", "--format", "json")
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    rows = {r["op"]: r for r in report["ops"]}
    assert rows["aten::max"]["threads"] == ["branch_0"] and rows["aten::_to_copy"]["dtypes"] == ["float32"]
    assert "threads" not in rows["aten::relu"]  # the main thread's branch
    assert rows["aten::addmm"]["count"] == 2 and set(rows["aten::addmm"]["nodes"]) == {"left", "right"}
    sync = next(w for w in report["warnings"] if w["op"] == "aten::_local_scalar_dense")
    assert sync["threads"] == ["branch_0"] and sync["locations"] == [_line("scale = y.double()")]


def _line(code: str) -> str:
    """``threaded_model.py:N``, N the line holding ``code``."""
    lines = (Path(__file__).parent / "threaded_model.py").read_text().splitlines()
    return f"threaded_model.py:{next(i for i, text in enumerate(lines, 1) if code in text)}"
