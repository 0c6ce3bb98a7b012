"""`migrate run` keeps its report and the program's exit status (issue 18, item 7): reports
survive os._exit and signals, fork-started workers are reported, signals follow the shell's
128+N convention, --report is checked before the program starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
NPU_WORK = "import os, signal, sys, torch\nx = torch.ones(4, device='npu')\ny = (x * 2).sum()\n"


def run(tmp_path: Path, body: str, *extra: str, timeout: float = 900, tracebacks: bool = False):
    script = tmp_path / "prog.py"
    script.write_text(NPU_WORK + body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "run",
            "-f",
            "none",
            "--report",
            str(tmp_path / "r.json"),
            *extra,
            "--",
            "python",
            str(script),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert tracebacks or "Traceback" not in proc.stderr, proc.stderr
    report = tmp_path / "r.json"
    return proc, (json.loads(report.read_text()) if report.exists() else None)


def test_os_exit_and_fork_workers_keep_the_report(tmp_path):
    # repros: os._exit(7) after NPU work gave an empty report; fork-started multiprocessing
    # workers were never reported
    body = (
        "import multiprocessing as mp\n"
        "def work():\n"
        "    torch.ones(3, device='npu').sub(1).sum()\n"
        "if __name__ == '__main__':\n"
        "    p = mp.get_context('fork').Process(target=work)\n"
        "    p.start(); p.join()\n"
        "    assert p.exitcode == 0\n"
        "    os._exit(7)\n"
    )
    proc, report = run(tmp_path, body)
    assert proc.returncode == 7, proc.stderr
    assert report["exit_code"] == 7 and report["processes"] == 2
    assert report["ops"].get("aten::mul.Tensor") == 1  # the parent's, once (not the child's copy)
    assert report["ops"].get("aten::sub.Tensor") == 1  # the worker's


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signal_exits_128_plus_its_number(tmp_path, sig):  # repro: 254/247/241
    # SIGINT with its default action (no KeyboardInterrupt: nothing runs at exit) and
    # SIGKILL keep what was flushed before them (work done PartWriter.FLUSH seconds ago);
    # SIGTERM writes the part in its handler, then ends the program as before.
    wait = "" if sig == signal.SIGTERM else "import time; time.sleep(1)\n"
    body = (
        (f"signal.signal({int(sig)}, signal.SIG_DFL)\n" if sig == signal.SIGINT else "")
        + wait
        + f"os.kill(os.getpid(), {int(sig)})\nimport time; time.sleep(30)\n"
    )
    proc, report = run(tmp_path, body)
    assert proc.returncode == 128 + sig, proc.stderr
    assert report["exit_code"] == 128 + sig
    assert report["ops"].get("aten::mul.Tensor") == 1  # the work before the signal
    assert "interrupted" not in proc.stderr  # migrate run itself was not


def test_report_path_is_checked_before_the_program_runs(tmp_path):  # repro: --report nope/r.json
    marker = tmp_path / "ran"
    script = tmp_path / "prog.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(4)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def migrate_run(report):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "migrate",
                "run",
                "-f",
                "none",
                "--report",
                str(report),
                "--",
                "python",
                str(script),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    (tmp_path / "file").write_text("")
    for bad in (script, tmp_path, tmp_path / "file" / "r.json", ""):
        proc = migrate_run(bad)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (bad, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not marker.exists(), bad
    assert script.read_text().startswith("open(")
    proc = migrate_run(tmp_path / "nope" / "r.json")  # a new folder is made, as -o does
    assert proc.returncode == 4 and marker.exists(), proc.stderr
    assert json.loads((tmp_path / "nope" / "r.json").read_text())["exit_code"] == 4


def test_unreadable_report_parts_are_left_out(tmp_path):
    from migrate.emulate.report import merge, read_parts

    good = {
        "rank": "0",
        "command": ["x"],
        "torch": "t",
        "target": "g",
        "ops": {"aten::add": 2},
        "findings": [],
        "notes": [],
    }
    (tmp_path / "part-1.json").write_text(json.dumps(good))
    (tmp_path / "part-2.json").write_text("{" * 100000)
    (tmp_path / "part-3.json").write_text(json.dumps({"ops": 5}))
    os.mkfifo(tmp_path / "part-4.json")
    report = merge(read_parts(tmp_path), ["x"], 0)
    assert report["processes"] == 1 and report["ops"] == {"aten::add": 2}
    assert report["summary"]["failed_processes"] == 0  # a part with no end key says nothing
    # ends a program's processes could write over their parts: judged by what they hold
    odd = [None, [], "x", {"exit_code": True}, {"exit_code": "1"}, {"exit_code": 10**100}, {"exception": 5}]
    parts = [{**good, "pid": i, "end": end} for i, end in enumerate(odd)]
    parts.append({**good, "pid": "p" * 1000, "rank": {"a": 1}, "command": "x", "end": {"exit_code": 2}})
    report = merge(parts, ["x"], 0)
    assert report["summary"]["failed_processes"] == 2, report["notes"]  # no end; exit code 2
    assert all(len(n) < 400 for n in report["notes"]), report["notes"]


def test_report_on_a_fifo_is_refused_before_the_program_starts(tmp_path, capsys):
    # the run hung writing its report into a FIFO nobody reads
    from hostile import main

    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    marker = tmp_path / "ran"
    code, _, err = main(
        capsys, "run", "--report", fifo, "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"
    )
    assert code == 2 and "FIFO" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()


WORKER = (
    "import multiprocessing as mp, subprocess\n"
    "def work(how):\n"
    "    torch.ones(3, device='npu').sub(1).sum()\n"
    "    if how == 'raise':\n"
    "        raise RuntimeError('boom\\x1b[2J in the worker')\n"
    "    if how == 'kill':\n"
    "        import time; time.sleep(1)\n"  # past a flush of its part (PartWriter.FLUSH)
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    if how == 'exit':\n"
    "        sys.exit(3)\n"
    "    if how == 'wait':\n"
    "        import time; time.sleep(60)\n"
)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_failed_worker_is_reported_while_the_exit_code_stays_the_programs(tmp_path, method):
    # repro: a multiprocessing worker that raised on the NPU left the run at exit code 0
    # with nothing said (mnist_hogwild-style programs join their workers without checking)
    body = WORKER + (
        "if __name__ == '__main__':\n"
        f"    ctx = mp.get_context('{method}')\n"
        "    ps = [ctx.Process(target=work, args=(h,)) for h in ('raise', 'kill', 'exit', 'ok')]\n"
        "    for p in ps: p.start()\n"
        "    for p in ps: p.join()\n"
    )
    proc, report = run(tmp_path, body, "-f", "text", tracebacks=True)
    assert proc.returncode == 0 and report["exit_code"] == 0, proc.stderr
    assert (
        report["processes"] >= 5 and report["summary"]["failed_processes"] == 3
    )  # spawn: + its resource tracker
    failed = [n for n in report["notes"] if n.startswith("process ")]
    assert len(failed) == 3, report["notes"]
    assert any("exited with code 1, raised RuntimeError: boom" in n for n in failed), failed
    assert any(n.endswith("exited with code 3") for n in failed), failed
    assert any("ended before it could say how" in n for n in failed), failed
    assert "3 other process(es) failed; exit code 0" in proc.stderr
    shown = [line for line in proc.stderr.splitlines() if line.startswith("note: process ")]
    assert len(shown) == 3 and not any("\x1b" in line for line in shown), shown  # escaped


def test_workers_stopped_by_their_parent_and_probes_are_not_failures(tmp_path):
    # false-alarm guard: SIGTERM is how pools, DataLoader and daemonic workers are stopped;
    # a probe subprocess that fails without touching the NPU is its parent's business
    body = WORKER + (
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('fork')\n"
        "    with ctx.Pool(2) as pool:\n"
        "        pool.map(work, ['ok', 'ok'])\n"  # the with-block ends in terminate()
        "    d = ctx.Process(target=work, args=('wait',), daemon=True)\n"
        "    d.start()\n"
        "    subprocess.run([sys.executable, '-c', 'import no_such_module'], stderr=subprocess.DEVNULL)\n"
        "    loader = torch.utils.data.DataLoader(list(range(8)), num_workers=2)\n"
        "    assert sum(len(b) for b in loader) == 8\n"
        "    import time; time.sleep(1)\n"
    )
    proc, report = run(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    assert report["summary"]["failed_processes"] == 0, report["notes"]
    assert report["processes"] >= 4


def test_a_process_that_outlives_the_run_leaves_nothing_behind(tmp_path):
    # repro (torch 2.14 CI job, once): a process still writing its part while the run removed
    # its folder ended `migrate run` with "Directory not empty"; a part written after the
    # removal made the folder again and left it in the temporary directory
    import time

    late = "import time, torch; torch.ones(2, device='npu').sum(); time.sleep(2)"
    body = f"import subprocess\nsubprocess.Popen([sys.executable, '-c', {late!r}])\n"
    temp = tmp_path / "temp"
    temp.mkdir()
    script = tmp_path / "prog.py"
    script.write_text(NPU_WORK + body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TMPDIR": str(temp)}
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "run", "-f", "none", "--", "python", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _late_child_done():
        time.sleep(0.5)
    time.sleep(1)  # the late process's exit writes
    assert [p.name for p in temp.iterdir() if p.name.startswith("migrate-emulate-")] == []


def _late_child_done() -> bool:
    out = subprocess.run(["pgrep", "-f", "time.sleep\\(2\\)"], capture_output=True, text=True)
    return not out.stdout.strip()


def test_ctrl_c_during_the_programs_start_up_exits_130(tmp_path):
    """SIGINT while the emulation starts in the program (torch being imported, before its
    main): 130 like any SIGINT, not Python's exit 1 for a failed ``site`` import."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(  # chained from the emulation's: runs at start-up
        "import os, signal, time\n"
        "if os.environ.get('MIGRATE_EMULATE'):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(60)\n"
    )
    (tmp_path / "prog.py").write_text("print('main ran')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(site))), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "run", "-f", "none", "--", "python", "prog.py"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 130, proc.stderr
    assert "main ran" not in proc.stdout
    assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr


def _run_in_tmpdir(tmp_path: Path, tmpdir: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "prog.py").write_text(NPU_WORK + body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TMPDIR": str(tmpdir)}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "migrate", "run", "-f", "none", "--", "python", "prog.py"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )


def test_the_run_leaves_no_inductor_cache_folder_in_tmpdir(tmp_path):
    """The emulation's op monitor makes torch import dynamo, which makes
    $TMPDIR/torchinductor_<user>: removed after the run, unless it was there before or the
    program put files in it."""
    from migrate.emulate.leftovers import default_cache_dir

    tmpdir = tmp_path / "T"
    tmpdir.mkdir()
    proc = _run_in_tmpdir(tmp_path, tmpdir, "print('done')\n")
    assert proc.returncode == 0, proc.stderr
    assert list(tmpdir.iterdir()) == []
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}  # as the run's
    cache = Path(default_cache_dir({**env, "TMPDIR": str(tmpdir)}) or "")
    assert cache.name.startswith("torchinductor_"), cache
    body = "open(os.environ['TORCHINDUCTOR_CACHE_DIR'] + '/made', 'w').close()\n"
    proc = _run_in_tmpdir(tmp_path, tmpdir, body)  # the program's own file in it: kept
    assert proc.returncode == 0, proc.stderr
    assert (cache / "made").is_file()
    (cache / "made").unlink()
    proc = _run_in_tmpdir(tmp_path, tmpdir, "print('done')\n")  # there before the run: kept
    assert proc.returncode == 0 and cache.is_dir()


def test_merged_findings_join_their_library_lines_and_drop_what_is_not_one():
    from migrate.emulate.report import MAX_VIA, merge, render_text

    row = {"kind": "cpu_fallback", "op": "aten::i0", "dtype": None, "module": "<root>"}
    row |= {"site": "m.py:3", "count": 1, "reason": "r"}
    parts = [
        {"rank": str(i), "ops": {}, "findings": [{**row, "via": via}], "notes": []}
        for i, via in enumerate([["lib/a.py:1"], ["lib/b.py:2", "lib/a.py:1"], "lib/c.py:3", [5, None]])
    ]
    parts.append(
        {
            "rank": "9",
            "ops": {},
            "findings": [{**row, "via": [f"lib/{n}.py:1" for n in range(9)]}],
            "notes": [],
        }
    )
    (finding,) = merge(parts, ["x"], 0)["findings"]
    assert finding["count"] == 5 and finding["via"][:2] == ["lib/a.py:1", "lib/b.py:2"]
    assert len(finding["via"]) == MAX_VIA and all(isinstance(v, str) for v in finding["via"])
    text = render_text(merge(parts[:2], ["x"], 0))
    assert "m.py:3: cpu_fallback: aten::i0 in <root> (x2) via lib/a.py:1, lib/b.py:2: r" in text


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_a_program_deaf_to_sigterm_is_killed_with_its_workers_kill_after_seconds_later(tmp_path):
    # repro: a program stuck in native code (a deadlock: its Python SIGTERM handler never
    # runs) kept `timeout 60 migrate run ...` alive forever; only kill -9 ended it
    import time

    deaf = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    body = (
        "import subprocess, time\n"
        f"worker = subprocess.Popen([sys.executable, '-c', {deaf!r}])\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "open('pids', 'w').write(f'{worker.pid}')\n"
        "time.sleep(600)\n"
    )
    (tmp_path / "prog.py").write_text(NPU_WORK + body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "migrate", "run", "-f", "none", "--report", "r.json", "--kill-after", "1"]
    proc = subprocess.Popen(
        [*argv, "--", "python", "prog.py"], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "pids").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(0.5)  # the worker's handler is set
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGKILL, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 128 + signal.SIGKILL
    assert any("still running 1 s after SIGTERM" in n for n in report["notes"]), report["notes"]
    worker = int((tmp_path / "pids").read_text())
    deadline = time.monotonic() + 30
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(worker)  # torchrun-style workers are not left running
