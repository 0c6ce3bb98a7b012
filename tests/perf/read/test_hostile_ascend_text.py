"""Hostile Ascend text results (CSV and JSON files of ASCEND_PROFILER_OUTPUT): each case is
one line and exit 2 naming the file, or the result is read with a note; never a traceback,
never a hang, memory bounded (`migrate perf` runs in a forked child with a time and memory
budget: tests/hostile.py bounded_main)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_text import write_text
from hostile import bounded_main

OUT = "ASCEND_PROFILER_OUTPUT"
pytestmark = pytest.mark.usefixtures("perf_loaded")
BOMB: list[Path] = []


@pytest.fixture(autouse=True)
def _bomb(gzip_bomb):
    BOMB[:] = [gzip_bomb]


def bomb(path: Path) -> None:
    shutil.copy(BOMB[0], path)


def perf(*paths: Path, fmt: str = "json") -> tuple[int, str, str]:
    return bounded_main("perf", *map(str, paths), "--format", fmt, seconds=900)


def result(tmp_path: Path, files=("trace", "kernels", "steps", "communication", "matrix")) -> Path:
    return write_text(sample_run(), tmp_path, files=files)


def refused(code: int, err: str, name: str) -> None:
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and name in lines[0], err


def sparse(path: Path, size: int = 2 << 30) -> None:
    """A ``size``-byte file of NUL bytes with no line break (sparse: costs no disk)."""
    with open(path, "wb") as fh:
        fh.truncate(size)


TRACE_CASES = {
    "cut short": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "not JSON": lambda p: p.write_text("<html>"),
    "NUL bytes": lambda p: p.write_bytes(p.read_bytes().replace(b'"ph"', b'"p\x00h"', 3)),
    "not UTF-8": lambda p: p.write_bytes(p.read_bytes().replace(b"aten::mm", b"aten::\xff\xfe", 1)),
    "a 2 GB line of NUL bytes": sparse,
    "a gzip bomb": bomb,
    "nested too deeply": lambda p: p.write_text("[" + '{"a":' * 100_000 + "1" + "}" * 100_000 + "]"),
    "an event of 68 MB": lambda p: p.write_text('[{"name": "' + "x" * (68 << 20) + '"}]'),
}


@pytest.mark.parametrize("case", sorted(TRACE_CASES))
def test_a_broken_trace_view_is_one_line_naming_it(tmp_path, case):
    path = result(tmp_path, files=("trace",)) / OUT / "trace_view.json"
    TRACE_CASES[case](path)
    code, _, err = perf(path.parent.parent)
    refused(code, err, "trace_view.json")


def test_numbers_that_are_not_finite_are_skipped_with_a_note(tmp_path):
    path = result(tmp_path, files=("trace",)) / OUT / "trace_view.json"
    events = json.loads(path.read_text())
    for e, bad in zip([e for e in events if e.get("ph") == "X"][:30], ["NaN", "Infinity", "1e999"] * 10):
        e["dur" if bad != "1e999" else "ts"] = bad
    text = (
        json.dumps(events)
        .replace('"NaN"', "NaN")
        .replace('"Infinity"', "Infinity")
        .replace('"1e999"', "1e999")
    )
    path.write_text(text)
    code, out, err = perf(path.parent.parent)
    assert code == 0, err
    assert any("without a usable time or duration were skipped" in n for n in json.loads(out)["notes"])


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_trace_view_that_is_not_a_regular_file_is_never_opened(tmp_path, kind):
    folder = result(tmp_path, files=("trace",)) / OUT
    path = folder / "trace_view.json"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    code, _, err = perf(folder.parent)
    refused(code, err, str(folder.parent))  # nothing readable there: what was looked for
    code, _, err = perf(path)  # named directly
    refused(code, err, "trace_view.json")


CSV_CASES = {
    "cut inside a quoted field": lambda p: p.write_bytes(p.read_bytes()[:-40] + b'"4096,40'),
    "NUL bytes": lambda p: p.write_bytes(p.read_bytes().replace(b",", b",\x00", 20)),
    "not UTF-8": lambda p: p.write_bytes(p.read_bytes().replace(b"MatMulV3", b"MatMul\xff\xfe", 2)),
    "NaN and 1e999 numbers": lambda p: p.write_text(
        p.read_text().replace(",0.9,", ",NaN,", 1).replace(",0.3,", ",1e999,", 1)
    ),
    "columns renamed": lambda p: p.write_text(p.read_text().replace("Duration(us)", "Dauer")),
    "rows duplicated": lambda p: p.write_text(p.read_text() + "".join(p.read_text().splitlines(True)[1:3])),
    "empty": lambda p: p.write_text(""),
    "a header only": lambda p: p.write_text(p.read_text().splitlines()[0] + "\n"),
}


@pytest.mark.parametrize("case", sorted(CSV_CASES))
def test_an_odd_kernel_details_is_read_with_a_note_or_refused(tmp_path, case):
    path = result(tmp_path, files=("kernels",)) / OUT / "kernel_details.csv"
    CSV_CASES[case](path)
    code, out, err = perf(path.parent.parent)
    assert code in (0, 2), err
    if code == 2:
        refused(code, err, "kernel_details.csv")
    else:
        assert json.loads(out)["profiles"], out


@pytest.mark.parametrize("writer", [sparse, bomb], ids=["a 2 GB line", "a gzip bomb"])
@pytest.mark.parametrize("name", ["kernel_details.csv", "step_trace_time.csv"])
def test_a_csv_that_never_ends_a_line_is_refused(tmp_path, name, writer):
    folder = result(tmp_path, files=("kernels", "steps")) / OUT
    writer(folder / name)
    code, _, err = perf(folder.parent)
    refused(code, err, name)


def test_the_old_kernel_list_columns_are_read(tmp_path):
    """torch_npu before 2.1: "Task Type" for the core and no "OP State"."""
    path = write_text(sample_run(), tmp_path, files=("kernels",), old_kernels=True)
    code, out, err = perf(path)
    assert code == 0, err
    report = json.loads(out)
    assert {o["core"] for o in report["top_ops"]} == {"AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "HCCL"}
    assert any("no OP State column" in n for n in report["notes"])


COMM_CASES = {
    "not JSON": lambda p: p.write_text("{'step1': "),
    "a list": lambda p: p.write_text("[1, 2, 3]"),
    "nested too deeply": lambda p: p.write_text('{"a":' * 100_000 + "1" + "}" * 100_000),
    "too large": lambda p: sparse(p, 300 << 20),
    "a gzip bomb": bomb,
    "not UTF-8": lambda p: p.write_bytes(b'{"step\xff": {}}'),
}


@pytest.mark.parametrize("name", ["communication.json", "communication_matrix.json"])
@pytest.mark.parametrize("case", sorted(COMM_CASES))
def test_a_broken_communication_file_is_one_line_naming_it(tmp_path, case, name):
    path = result(tmp_path, files=("kernels", "communication", "matrix")) / OUT / name
    COMM_CASES[case](path)
    code, _, err = perf(path.parent.parent)
    refused(code, err, name)


def test_odd_members_of_communication_json_are_skipped_with_a_note(tmp_path):
    path = result(tmp_path, files=("kernels", "communication")) / OUT / "communication.json"
    doc = json.loads(path.read_text())
    op = doc["step1"]["collective"]
    first = next(iter(op.values()))
    first["Communication Bandwidth Info"]["HCCS"]["Size Distribution"] = {
        "NaN": [1, 2],
        "0.1": "x",
        "1e999": [1],
    }
    first["Communication Bandwidth Info"]["PCIE"]["Transit Size(MB)"] = float("inf")
    doc["step2"]["collective"] = ["not", "a", "mapping"]
    doc["step3"] = 7
    path.write_text(json.dumps(doc))
    code, out, err = perf(path.parent.parent)
    assert code == 0, err
    assert any("member(s) of an unexpected type were skipped" in n for n in json.loads(out)["notes"])
