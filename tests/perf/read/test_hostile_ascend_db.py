"""Hostile .db exports and folders of Ascend results: each case is one line and exit 2
naming the file, or read with a note; never a traceback, never a hang, memory bounded."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_db import write_db
from ascend_run_text import write_text
from hostile import bounded_main

pytestmark = pytest.mark.usefixtures("perf_loaded")
DB = "ascend_pytorch_profiler_0.db"


def perf(*paths: Path) -> tuple[int, str, str]:
    return bounded_main("perf", *map(str, paths), "--format", "json", seconds=900)


def refused(code: int, err: str, name: str) -> None:
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and name in lines[0], err


def export(tmp_path: Path, **kw) -> Path:
    return write_db(sample_run(), tmp_path, **kw) / "ASCEND_PROFILER_OUTPUT"


def sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


FILE_CASES = {
    "not SQLite": lambda p: p.write_bytes(b"PK\x03\x04 a zip, not a database" * 100),
    "an SQLite header then garbage": lambda p: p.write_bytes(b"SQLite format 3\x00" + os.urandom(8192)),
    "cut short": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3]),
    "pages overwritten": lambda p: p.write_bytes(
        p.read_bytes()[:4096] + b"\xff" * (len(p.read_bytes()) - 4096)
    ),
    "empty": lambda p: p.write_bytes(b""),
}


@pytest.mark.parametrize("name", [DB, "analysis.db"])
@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_broken_db_is_one_line_naming_it(tmp_path, case, name):
    path = export(tmp_path) / name
    FILE_CASES[case](path)
    code, _, err = perf(path.parent.parent)
    refused(code, err, name)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_db_that_is_not_a_regular_file_is_never_opened(tmp_path, kind):
    path = export(tmp_path) / DB
    path.unlink()
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    code, _, err = perf(path)
    refused(code, err, DB)


SCHEMA_CASES = {
    # a view that never ends: not a plain table, so never queried
    "a recursive view named TASK": (
        "DROP TABLE TASK",
        "CREATE VIEW TASK AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
        "SELECT x AS startNs, x AS endNs, 0 AS deviceId, x AS connectionId, x AS globalTaskId, "
        "0 AS globalPid, 0 AS taskType, 0 AS contextId, 0 AS streamId, 0 AS taskId, 0 AS modelId FROM n",
    ),
    # a generated column (40 MB a row: past the 16 MB a value may have)
    "a generated column": (
        "DROP TABLE STRING_IDS",
        "CREATE TABLE STRING_IDS (id INTEGER, v TEXT, value TEXT AS (v || hex(zeroblob(20000000))))",
        "INSERT INTO STRING_IDS (id, v) VALUES (1, 'x')",
    ),
    "times that are text, negative or NaN": (
        "UPDATE TASK SET startNs = 'soon' WHERE globalTaskId = 0",
        "UPDATE TASK SET endNs = startNs - 5 WHERE globalTaskId = 1",
        "UPDATE TASK SET startNs = 1e999 WHERE globalTaskId = 2",
        "UPDATE PYTORCH_API SET endNs = 'x' WHERE rowid = 2",
    ),
    "strings of 10 MB": ("UPDATE STRING_IDS SET value = value || hex(zeroblob(5000000)) WHERE id < 5",),
    "counts and sizes out of range": (
        "UPDATE COMMUNICATION_OP SET count = 1e300",
        "UPDATE COMMUNICATION_TASK_INFO SET size = -7",
        "UPDATE COMMUNICATION_OP SET dataType = 'FP32'",
    ),
    "ids pointing nowhere": ("UPDATE COMPUTE_TASK_INFO SET opType = 99999999, taskType = -3",),
    "a table without its columns": ("DROP TABLE CANN_API", "CREATE TABLE CANN_API (x INTEGER)"),
    "no STRING_IDS": ("DROP TABLE STRING_IDS",),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_a_hostile_schema_or_odd_values_are_read_with_a_note_or_refused(tmp_path, case):
    folder = export(tmp_path)
    sql(folder / DB, *SCHEMA_CASES[case])
    code, out, err = perf(folder.parent)
    if code == 2:
        refused(code, err, DB)
    else:
        assert code == 0, err
        assert json.loads(out)["profiles"]


def test_the_recursive_view_is_refused_with_a_note(tmp_path):
    folder = export(tmp_path)
    sql(folder / DB, *SCHEMA_CASES["a recursive view named TASK"])
    code, out, err = perf(folder.parent)
    assert code == 0, err
    assert any("TASK not plain tables: not read" in n for n in json.loads(out)["notes"])


# -- folders ------------------------------------------------------------------------------------


def test_symlink_loops_in_a_cluster_folder_end(tmp_path):
    for r in range(2):
        write_text(sample_run(rank=r), tmp_path / "job")
    (tmp_path / "job" / "loop").symlink_to(tmp_path / "job")
    (tmp_path / "job" / "run_0_ascend_pt" / "back").symlink_to(tmp_path)
    (tmp_path / "job" / "a").symlink_to(tmp_path / "job" / "b")
    (tmp_path / "job" / "b").symlink_to(tmp_path / "job" / "a")
    code, out, err = perf(tmp_path / "job")
    assert code == 0, err
    assert sorted(p["ranks"][0] for p in json.loads(out)["profiles"]) == [0, 1]


def test_a_folder_without_a_profile_says_what_it_looked_for(tmp_path):
    (tmp_path / "empty" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("nothing here")
    code, _, err = perf(tmp_path / "empty")
    refused(code, err, "looked for")


def test_one_broken_rank_of_a_cluster_names_its_file(tmp_path):
    for r in range(3):
        write_text(sample_run(rank=r), tmp_path)
    bad = tmp_path / "run_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    bad.write_bytes(b'Device_id,Step,Computing\n0,1,"' + b"x" * 100)
    code, out, err = perf(tmp_path)
    if code == 2:
        refused(code, err, "step_trace_time.csv")
    else:
        assert len(json.loads(out)["profiles"]) == 3, err


@pytest.mark.parametrize(
    "info",
    [
        b"not json",
        b'{"rank_id": 1e999}',
        b'{"rank_id": -3}',
        b'{"rank_id": "7"}',
        b"[" * 100_000,
        b"\xff\xfe",
    ],
)
def test_odd_profiler_info_leaves_the_rank_to_the_file_name(tmp_path, info):
    result = write_text(sample_run(rank=5), tmp_path, files=("kernels",))
    (result / "profiler_info_5.json").write_bytes(info)
    code, out, err = perf(result)
    assert code == 0, err
    assert json.loads(out)["profiles"][0]["ranks"] == [5]


def test_a_table_without_the_columns_read_is_skipped_with_a_note(tmp_path):
    folder = export(tmp_path)
    sql(folder / DB, *SCHEMA_CASES["a table without its columns"])
    code, out, err = perf(folder.parent)
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any("CANN_API (no startNs, endNs, type, globalTid, connectionId): not read" in n for n in notes), (
        notes
    )
