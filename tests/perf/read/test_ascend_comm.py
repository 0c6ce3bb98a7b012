"""Communication on Ascend: communication.json / communication_matrix.json, the trace's HCCL
process, kernel_details.csv's COMMUNICATION rows; each collective counted once in the step
breakdown and the top operators; PERF302 / PERF303 as msprof-analyze 26.2 judges them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_text import write_text

from migrate.perf.read.ascend import read_ascend
from migrate.perf.read.discover import discover
from migrate.perf.run import PerfRequest, analyze

MSPROF = Path(os.environ.get("MSPROF_ANALYZE", "/tmp/msvenv/bin/msprof-analyze"))


def timeline(path: Path):
    (src,) = discover([path])
    return read_ascend(src)


def findings(path: Path) -> dict:
    return {f.id: f for f in analyze(PerfRequest([path])).findings}


def test_communication_json_gives_each_collective_once(built):
    run = built["run"]
    doc = json.loads((built["text"] / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
    assert "Total Op Info" in doc["step1"]["collective"]  # the writer's sum, in the file
    comm = timeline(built["text"]).tables["communication"]
    assert comm["source"] == "communication.json"
    assert [op["name"] for op in comm["ops"]] == [c.name for c in run.collectives]  # file order, no sum
    op, c = comm["ops"][0], run.collectives[0]
    assert (op["group"], op["kind"], op["step"]) == ("12345", "collective", "step1")
    assert op["elapse_ms"] == pytest.approx(1.0) and op["wait_ms"] == pytest.approx(0.1)
    moved = [t for t in c.tasks if t.name == "Memcpy" and t.link != "ON_CHIP"]
    assert op["links"]["SDMA"]["bytes"] == pytest.approx(sum(t.size for t in moved))  # HCCS + PCIE
    assert op["links"]["HCCS"]["bytes"] == pytest.approx(sum(t.size for t in moved if t.link == "HCCS"))
    assert [(b, n) for b, n, _ in op["sizes"]["HCCS"]] == [(3000.0, 1), (3072.0, 1)]  # bytes: MB x 10**6
    matrix = timeline(built["text"]).tables["communication_matrix"]
    assert {(r["op"], r["src"], r["dst"], r["transport"]) for r in matrix} == {
        ("allreduce", 0, 0, "LOCAL"),
        ("allreduce", 0, 1, "HCCS"),
    }


def test_an_older_communication_json_without_steps_or_kinds(tmp_path):
    result = write_text(sample_run(), tmp_path, files=("communication",))
    path = result / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    doc = json.loads(path.read_text())
    flat = {
        k: v for step in doc.values() for ops in step.values() for k, v in ops.items() if k != "Total Op Info"
    }
    path.write_text(json.dumps(flat))
    ops = timeline(result).tables["communication"]["ops"]
    assert len(ops) == 4 and all(op["step"] is None and op["links"] for op in ops)


def test_the_trace_hccl_process_alone_gives_the_same_collectives(tmp_path, built):
    """trace_view.json only: the collectives from the HCCL process (Group/Plane threads), their
    tasks counted as CANN counts them; the same tasks on Ascend Hardware and the event waits
    are not computation; the breakdown from the overlap tracks."""
    run = built["run"]
    tl = timeline(write_text(run, tmp_path, files=("trace",)))
    hcom = [op for op in tl.device_ops if op.core == "HCCL"]
    assert [op.name for op in hcom] == [c.name for c in run.collectives]
    assert {(op.group, op.bytes, op.type) for op in hcom} == {("12345", 4096.0, "hcom_allReduce")}
    assert len(tl.device_ops) == len(run.kernels) + len(run.collectives)
    assert (
        tl.facts["communication_stream_tasks"] == sum(len(c.tasks) for c in run.collectives) - 4
    )  # waits aside
    assert tl.facts["stream_waits"] == len(run.waits) + 4  # EVENT_WAIT + the NOTIFY_WAIT copies
    from_trace = {op["name"]: op for op in tl.tables["communication"]["ops"]}
    from_json = {op["name"]: op for op in timeline(built["text"]).tables["communication"]["ops"]}
    for name, want in from_json.items():
        got = from_trace[name]
        assert got["links"].keys() == want["links"].keys()
        for link in want["links"]:
            assert got["links"][link]["bytes"] == pytest.approx(want["links"][link]["bytes"])
        assert got["wait_ms"] == pytest.approx(want["wait_ms"])
        assert [(b, n) for b, n, _ in got["sizes"]["HCCS"]] == [(b, n) for b, n, _ in want["sizes"]["HCCS"]]
    steps = analyze(PerfRequest([Path(tl.path)])).steps
    want = run.step_figures()
    assert [s.source for s in steps] == ["overlap tracks"] * 2
    assert [s.computing_us for s in steps] == [f["computing"] for f in want]
    assert [s.communication_not_overlapped_us for s in steps] == [
        f["communication_not_overlapped"] for f in want
    ]


def test_kernel_details_collectives_never_count_twice(tmp_path, built):
    """trace_view.json + kernel_details.csv (its COMMUNICATION rows, stream N/A): each
    collective is one op; with the kernel list alone, its rows are the collectives."""
    run = built["run"]
    both = timeline(write_text(run, tmp_path / "both", files=("trace", "kernels")))
    assert len(both.device_ops) == len(run.kernels) + len(run.collectives)
    report = analyze(PerfRequest([Path(both.path)]))
    hcom = next(o for o in report.top_ops if o.core == "HCCL")
    assert (hcom.type, hcom.count, hcom.total_us) == ("hcom_allReduce", 4, 4000.0)
    assert [s.communication_us for s in report.steps] == [2000.0, 2000.0]
    alone = timeline(write_text(run, tmp_path / "alone", files=("kernels",)))
    assert sorted(op.core for op in alone.device_ops) == sorted([k.core for k in run.kernels] + ["HCCL"] * 4)
    steps = analyze(PerfRequest([Path(alone.path)])).steps
    assert [s.communication_not_overlapped_us for s in steps] == [2000.0, 2000.0]


@pytest.mark.parametrize(
    ("sizes", "small", "unaligned"),
    [
        ((3072, 3072, 3000), True, True),  # small packets, one size not a multiple of 512
        ((3072, 1024, 512), True, False),  # aligned
        ((100, 200, 300), True, False),  # transfers of 512 bytes or less are not judged
        ((16_777_216, 8_388_608, 1_048_576), False, False),  # over 16 MB per collective over SDMA
    ],
)
def test_packet_and_alignment_limits_are_msprof_analyzes(tmp_path, sizes, small, unaligned):
    got = findings(write_text(sample_run(sizes=sizes), tmp_path, files=("trace", "communication")))
    assert ("PERF302" in got) is small
    assert ("PERF303" in got) is unaligned
    if small:
        (sdma,) = got["PERF302"].evidence["transports"]
        assert (sdma["transport"], sdma["small"], sdma["total"], sdma["limit_mb"]) == ("SDMA", 4, 4, 16)
    if unaligned:
        ev = got["PERF303"].evidence
        assert (ev["unaligned_ops"], ev["ops"], ev["unaligned"], ev["total"]) == (4, 4, 4, 12)


@pytest.mark.slow
@pytest.mark.skipif(not MSPROF.is_file(), reason="msprof-analyze (the reference tool) is not installed")
def test_msprof_analyze_advisor_agrees_on_packets_and_alignment(built, tmp_path):
    out = subprocess.run(
        [str(MSPROF), "advisor", "all", "-d", str(built["text"]), "-l", "en", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    ours = findings(built["text"])
    assert "Found the data size of 4 communication operators is not aligned" in out
    assert ours["PERF303"].evidence["unaligned_ops"] == 4
    assert "In the SDMA communication, 100.00% of the communication data volume is less than 16.0 MB" in out
    assert ours["PERF302"].evidence["transports"][0]["ratio"] == 1.0
