"""Cluster input: msprof-analyze's cluster_analysis_output (text files or cluster_analysis.db)
and a folder of N ``*_ascend_pt`` rank results read as one cluster; the slow rank and slow
link they show, checked against the files read by hand and against msprof-analyze itself
where it is installed."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_db import write_db
from ascend_run_text import write_text
from cluster_run import write_cluster_db, write_cluster_text

from migrate.perf.read.cluster import read_cluster
from migrate.perf.read.discover import discover
from migrate.perf.run import PerfRequest, analyze

MSPROF = Path(os.environ.get("MSPROF_ANALYZE", "/tmp/msvenv/bin/msprof-analyze"))


def ranks(world: int = 4) -> list:
    """Rank 2 is slow (the others wait for it in every all-reduce); rank 3's HCCS is slow."""
    return [
        sample_run(
            rank=r,
            world=world,
            hccs_slow=3.0 if r == 3 else 1.0,
            collective_ns=200_000 if r == 2 else 1_000_000,
        )
        for r in range(world)
    ]


def verdicts(*paths: Path) -> dict[str, list]:
    report = analyze(PerfRequest(list(paths)))
    out: dict[str, list] = {}
    for f in report.findings:
        if f.id in ("PERF304", "PERF305"):
            out.setdefault(f.id, []).append((f.rank, f.evidence.get("bottleneck") or f.evidence.get("link")))
    return out


def test_the_real_cluster_output_read_by_hand(ascend_data):
    path = ascend_data / "cluster_analysis_output"
    (src,) = discover([path])
    data = read_cluster(src)
    with open(path / "cluster_step_trace_time.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Type"] == "rank"]
    assert sorted(data.steps) == sorted(int(r["Index"]) for r in rows) == list(range(8))
    for r in rows:
        (step,) = data.steps[int(r["Index"])]
        assert step.computing_us == float(r["Computing"]) and step.free_us == float(r["Free"])
        assert step.communication_not_overlapped_us == float(r["Communication(Not Overlapped)"])
    doc = json.loads((path / "cluster_communication.json").read_text())
    ops = doc["(0, 1)"]["step"]
    for row in data.links:
        infos = [
            per_rank[str(row.rank)]["Communication Bandwidth Info"][row.link] for per_rank in ops.values()
        ]
        assert row.bytes == pytest.approx(sum(i["Transit Size(MB)"] for i in infos) * 1e6)
        assert row.ms == pytest.approx(sum(i["Transit Time(ms)"] for i in infos))
    # the file's Bandwidth(GB/s) is its MB over its ms, so a row's bandwidth is the file's own
    first = next(iter(ops.values()))["0"]["Communication Bandwidth Info"]["HCCS"]
    assert first["Bandwidth(GB/s)"] == pytest.approx(
        first["Transit Size(MB)"] / first["Transit Time(ms)"], abs=1e-4
    )
    hccs0 = next(r for r in data.links if (r.rank, r.link) == (0, "HCCS"))
    assert hccs0.bandwidth_gbs == pytest.approx(hccs0.bytes / 1e6 / hccs0.ms)
    # MB is 10**6 bytes: every transfer size of the file is a whole number of bytes then
    sizes = {
        float(k)
        for per_rank in ops.values()
        for info in per_rank.values()
        for b in info["Communication Bandwidth Info"].values()
        for k in b["Size Distribution"]
    }
    assert sizes and all(abs(s * 1e6 - round(s * 1e6)) < 1e-6 for s in sizes)
    assert {round(s * 1e6) for s in sizes} == {56, 128, 2752, 2944, 3072}


def test_the_writers_own_sums_are_not_counted_again(tmp_path):
    runs = ranks()
    out = write_cluster_text(runs, tmp_path)
    assert (
        "Total Op Info@12345"
        in json.loads((out / "cluster_communication.json").read_text())["(0, 1, 2, 3)"]["step1"]
    )
    (src,) = discover([out])
    data = read_cluster(src)
    hccs = {r.rank: r for r in data.links if r.link == "HCCS"}
    per_op = [t for c in runs[0].collectives for t in c.tasks if t.link == "HCCS" and t.name == "Memcpy"]
    assert hccs[0].bytes == pytest.approx(sum(t.size for t in per_op))  # not twice
    assert hccs[3].ms == pytest.approx(3 * hccs[0].ms)
    assert {(p.src, p.dst) for p in data.pairs} == {(0, 1), (1, 2), (2, 3), (3, 0)}  # no self links


def test_rank_folders_cluster_output_and_db_agree(tmp_path):
    """One job as its rank folders (text, then .db), as cluster_analysis_output text files and
    as cluster_analysis.db: rank 2 is the slow rank (free), rank 3's HCCS the slow link."""
    runs = ranks()
    text = [write_text(r, tmp_path / "text") for r in runs]
    dbs = [write_db(r, tmp_path / "db") for r in runs]
    want_rank = [(2, "free")]
    got = verdicts(tmp_path / "text")
    assert got["PERF304"] == want_rank and got["PERF305"] == [(3, "HCCS")]
    assert verdicts(tmp_path / "db") == got
    assert len(text) == len(dbs) == 4
    from_text = verdicts(write_cluster_text(runs, tmp_path / "c1"))
    from_db = verdicts(write_cluster_db(runs, tmp_path / "c2"))
    assert from_text["PERF304"] == from_db["PERF304"] == want_rank
    assert (
        sorted(from_text["PERF305"]) == sorted(from_db["PERF305"]) == [(3, "HCCS"), (3, "HCCS")]
    )  # rank, pair


def test_a_balanced_cluster_has_no_slow_rank_or_link(tmp_path):
    for r in range(4):
        write_text(sample_run(rank=r, world=4), tmp_path)
    assert verdicts(tmp_path) == {}


@pytest.mark.slow
@pytest.mark.skipif(not MSPROF.is_file(), reason="msprof-analyze (the reference tool) is not installed")
def test_msprof_analyze_names_the_same_rank_and_link(tmp_path):
    """msprof-analyze 26.2's own cluster analysis of the same rank folders: its slow-rank
    analyser's rank with the most free time and its slow-link analyser's rank with the
    lowest SDMA bandwidth are ours; and we read its cluster_analysis_output to the same."""
    for r in ranks():
        write_text(r, tmp_path)
    subprocess.run(
        [str(MSPROF), "cluster", "-d", str(tmp_path), "-m", "all", "--export_type", "text"],
        check=True,
        capture_output=True,
        timeout=900,
    )
    script = (
        "import sys\n"
        "from msprof_analyze.advisor.analyzer.cluster.slow_rank_analyzer import SlowRankAnalyzer\n"
        "from msprof_analyze.advisor.analyzer.cluster.slow_link_analyzer import SlowLinkAnalyzer\n"
        "rank = SlowRankAnalyzer(sys.argv[1]).get_global_step_rank('free(us)')['maximum']['rank_id']\n"
        "link = SlowLinkAnalyzer(sys.argv[1]).get_global_step_rank('SDMA')['minimum']['rank_id']\n"
        "print(rank, link)\n"
    )
    out = subprocess.run(
        [str(MSPROF.parent / "python"), "-c", script, str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout.split()
    assert [int(x) for x in out[-2:]] == [2, 3]
    cluster = tmp_path / "cluster_analysis_output"
    shutil.copytree(cluster, tmp_path / "only" / "cluster_analysis_output")
    got = verdicts(tmp_path / "only" / "cluster_analysis_output")
    assert got["PERF304"] == [(2, "free")] and (3, "HCCS") in got["PERF305"]


def test_text_files_and_the_db_side_by_side_count_once(tmp_path):
    runs = ranks()
    write_cluster_text(runs, tmp_path)
    out = write_cluster_db(runs, tmp_path)
    (src,) = discover([out])
    assert {"cluster_step_trace_time", "cluster_db"} <= set(src.files)
    data = read_cluster(src)
    assert {rank: len(steps) for rank, steps in data.steps.items()} == {0: 2, 1: 2, 2: 2, 3: 2}
    assert len({(r.group, r.rank, r.link) for r in data.links}) == len(data.links)
