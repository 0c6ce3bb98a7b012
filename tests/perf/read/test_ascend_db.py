"""The .db export (ascend_pytorch_profiler_{rank}.db + analysis.db, and msprof's own
msprof_*.db) reads as the same run written as text files: the same step breakdown, top
operators and findings; each table's role checked on its own."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_db import write_db

from migrate.perf.analyze.context import RankContext
from migrate.perf.read.ascend_db import read_ascend_db
from migrate.perf.read.discover import discover
from migrate.perf.run import PerfRequest, analyze


def same(f):
    """A finding as compared across the two exports (the step breakdown's source aside)."""
    return f.id, f.message, repr({k: v for k, v in f.evidence.items() if k != "source"}), f.saving_us


def _figures(step):
    return {k: v for k, v in dataclasses.asdict(step).items() if k != "source"}


def report(path):
    return analyze(PerfRequest([Path(path)]))


def timeline(path):
    (src,) = discover([path])
    assert src.kind == "ascend-db"
    return read_ascend_db(src)


def test_the_db_export_reads_as_the_text_result(built):
    text, db = report(built["text"]), report(built["db"])
    assert [_figures(s) for s in db.steps] == [_figures(s) for s in text.steps]
    assert [s.source for s in db.steps] == ["analysis.db StepTraceTime"] * 2
    assert [dataclasses.asdict(o) for o in db.top_ops] == [dataclasses.asdict(o) for o in text.top_ops]
    got, want = {same(f) for f in db.findings}, {same(f) for f in text.findings}
    assert got == want
    assert {"PERF101", "PERF201", "PERF202", "PERF301", "PERF302", "PERF303", "PERF401"} <= {
        f.id for f in db.findings
    }


def test_each_table_gives_its_part_of_the_timeline(built):
    run = built["run"]
    tl = timeline(built["db"])
    assert (tl.rank, tl.chip, tl.kind, tl.device) == (0, "Ascend910B3", "ascend", "npu")
    assert tl.environment == run.env  # META_DATA ENV_VARIABLES
    assert [(s.id, s.end - s.start) for s in tl.steps] == [(1, 10_000.0), (2, 10_000.0)]  # STEP_TIME, us
    ops = list(tl.device_ops)
    assert len(ops) == len(run.kernels) + len(run.collectives)  # the HCCL tasks are not ops of their own
    mm = next(op for op in ops if op.type == "MatMulV3")
    assert (mm.core, mm.stream, mm.dur, mm.state) == ("AI_CORE", 3, 900.0, "static")
    assert (mm.shapes, mm.dtypes) == ("4096,4096;4096,4096", "FLOAT16;FLOAT16")
    hcom = next(op for op in ops if op.core == "HCCL")
    assert (hcom.type, hcom.group, hcom.bytes) == ("hcom_allReduce", "12345", 1024 * 4)  # count x FP32
    host = {op.name: op for op in tl.host_ops}
    assert host["aten::mm"].stack == "train.py(12): forward;train.py(30): main"  # PYTORCH_CALLCHAINS
    assert "Node@launch" in host  # CANN_API, named as the trace names it
    ctx = RankContext(tl)
    launched = {tl.device_ops.get(d).type: tl.host_ops.get(h).name for d, h in ctx.launcher.items()}
    assert launched == {"MatMulV3": "aten::mm", "Add": "aten::add", "Cast": "aten::sum"}  # CONNECTION_IDS
    assert tl.facts["task_queue"] is False
    comm = tl.tables["communication"]
    assert comm["source"] == "analysis.db" and len(comm["ops"]) == len(run.collectives)


def test_the_collectives_tasks_give_what_analysis_db_gives(built, tmp_path):
    """Without analysis.db the communication table is built from COMMUNICATION_TASK_INFO, as
    CANN's parser builds communication.json: the same bytes and times per link."""
    run = built["run"]
    with_analysis = timeline(built["db"]).tables["communication"]["ops"]
    bare = timeline(write_db(run, tmp_path, analysis=False))
    assert bare.tables["communication"]["source"] == "ascend_pytorch_profiler_0.db"
    for got, want in zip(bare.tables["communication"]["ops"], with_analysis, strict=True):
        assert got["name"] == want["name"] and got["links"].keys() == want["links"].keys()
        for link in want["links"]:
            assert got["links"][link]["bytes"] == pytest.approx(want["links"][link]["bytes"])
            assert got["links"][link]["ms"] == pytest.approx(want["links"][link]["ms"])
        assert got["sizes"].keys() == want["sizes"].keys()
        for link, sizes in want["sizes"].items():
            assert [(b, n) for b, n, _ in got["sizes"][link]] == [(b, n) for b, n, _ in sizes]
            assert [ms for *_, ms in got["sizes"][link]] == pytest.approx([ms for *_, ms in sizes])
        assert got["wait_ms"] == pytest.approx(want["wait_ms"])
    steps = analyze(PerfRequest([Path(bare.path)])).steps
    assert [s.source for s in steps] == ["device ops", "device ops"]  # no StepTraceTime
    assert [s.communication_not_overlapped_us for s in steps] == [2000.0, 2000.0]


def test_an_older_writer_without_op_state_is_read_with_a_note(tmp_path):
    tl = timeline(write_db(sample_run(), tmp_path, drop=("COMPUTE_TASK_INFO.opState", "NPU_INFO")))
    assert {op.state for op in tl.device_ops} == {""}
    assert tl.chip is None
    assert any("no opState column" in n for n in tl.notes)
    assert not [f for f in report(tl.path).findings if f.id == "PERF102"]


def test_msprof_db_alone_in_its_prof_folder(tmp_path):
    """msprof's own export: CANN's tables only, no framework ops; found in PROF_*/."""
    result = write_db(
        sample_run(),
        tmp_path,
        analysis=False,
        drop=("PYTORCH_API", "PYTORCH_CALLCHAINS", "CONNECTION_IDS", "STEP_TIME"),
    )
    prof = tmp_path / "job" / "PROF_000001_20250101_abc"
    prof.mkdir(parents=True)
    shutil.copy(
        result / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db", prof / "msprof_20250101.db"
    )
    (src,) = discover([tmp_path / "job"])
    assert src.kind == "ascend-db" and src.path.name == "msprof_20250101.db"
    tl = read_ascend_db(src)
    assert len(tl.device_ops) == 10 and {op.name.split("@")[0] for op in tl.host_ops} == {"Node"}
    assert all(launch in tl.launches for launch in tl.device_ops.cols["launch"] if launch >= 0)


def test_a_db_of_several_devices_keeps_the_ranks_one(tmp_path):
    result = write_db(sample_run(), tmp_path)
    path = result / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO TASK SELECT startNs, endNs, 7, connectionId, globalTaskId + 100000, globalPid, "
            "taskType, contextId, streamId, taskId, modelId FROM TASK WHERE globalTaskId < 6"
        )
        conn.execute(
            "INSERT INTO COMPUTE_TASK_INFO SELECT name, globalTaskId + 100000, blockDim, mixBlockDim, "
            "taskType, opType, inputFormats, inputDataTypes, inputShapes, outputFormats, outputDataTypes, "
            "outputShapes, attrInfo, opState, hf32Eligible FROM COMPUTE_TASK_INFO WHERE globalTaskId < 6"
        )
    tl = timeline(result)
    assert len(tl.device_ops) == 10
    assert any("devices 7 besides device 0" in n for n in tl.notes)


def test_a_table_past_the_row_cap_is_read_in_part_with_a_note(built, monkeypatch):
    from migrate.perf.read import ascend_db_device, ascend_db_host

    monkeypatch.setattr(ascend_db_device, "MAX_ROWS", 4)
    monkeypatch.setattr(ascend_db_host, "MAX_ROWS", 4)
    tl = timeline(built["db"])
    assert len([op for op in tl.device_ops if op.core != "HCCL"]) == 4
    cut = [n for n in tl.notes if "only the first rows of" in n]
    assert cut and "COMPUTE_TASK_INFO (4 rows)" in cut[0], tl.notes
