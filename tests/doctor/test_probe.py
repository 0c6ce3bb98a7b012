"""The subprocess probes: bounded output, timeouts that kill the whole process group, the
metadata of real torch_npu 2.14.0 read as the doctor reads it, nothing imported here."""

from __future__ import annotations

import os
import sys
import time
import zipfile

from npu_wheel import wheel_path

from migrate.doctor.probe import MARK, metadata_facts, parse_mark, run_bounded


def test_output_is_bounded_and_the_child_is_drained(tmp_path):
    ran = run_bounded(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdout.write('x' * 5_000_000); sys.stderr.write('y' * 3_000_000)",
        ],
        env=dict(os.environ),
        cwd=str(tmp_path),
        timeout=900,
        limit=1000,
    )
    assert ran.returncode == 0 and ran.truncated
    assert len(ran.stdout) == 1000 and len(ran.stderr) == 1000


def test_a_hanging_child_and_its_children_are_killed(tmp_path):
    """Event-based, not timed: the grandchild's pid is written once it runs; after the
    timeout it must be gone (polled), whatever the machine's speed."""
    started = tmp_path / "started"
    script = (
        "import pathlib, subprocess, time; "
        "p = subprocess.Popen(['sleep', '3600']); "
        f"pathlib.Path({str(started)!r}).write_text(str(p.pid)); time.sleep(3600)"
    )
    begin = time.monotonic()
    ran = run_bounded([sys.executable, "-c", script], env=dict(os.environ), cwd=str(tmp_path), timeout=20)
    assert ran.timed_out and time.monotonic() - begin < 600
    assert started.exists()  # the grandchild was running when the timeout struck
    pid = int(started.read_text())
    deadline = time.monotonic() + 600
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)  # the whole process group went


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (killed, not yet reaped by its new parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_the_last_marker_line_wins():
    out = (
        "Warning: ASCEND_HOME_PATH environment variable is not set.\n"
        f'{MARK}{{"a": 1}}\nnoise\n{MARK}{{"a": 2}}\n'
    )
    assert parse_mark(out) == {"a": 2}
    assert parse_mark("no marker") is None
    assert parse_mark(f"{MARK}[1, 2]") is None
    assert parse_mark(f"{MARK}{{broken") is None


def test_real_torch_npu_metadata_is_read_without_importing(fpy):
    """The 2.14.0 wheel's dist-info (its METADATA and entry_points.txt as published) in a
    virtualenv without the package itself: the probe reads it and imports nothing."""
    with zipfile.ZipFile(wheel_path("2.14.0")) as wheel:
        for name in wheel.namelist():
            if name.startswith("torch_npu-2.14.0.dist-info/") and not name.endswith("/"):
                target = fpy.site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(wheel.read(name))
    fpy.torch("2.14.0+cpu")
    (fpy.site / "torch/__init__.py").write_text("raise SystemExit('imported!')\n")
    facts = metadata_facts(fpy.python, ["torch", "torch-npu"], {"PATH": os.environ["PATH"]})
    npu = facts["dists"]["torch-npu"]
    assert npu["version"] == "2.14.0"
    assert "torch==2.14.0.*" in npu["requires"]
    assert ["torch.backends", "torch_npu", "torch_npu:_autoload"] in npu["entry_points"]
    assert facts["dists"]["torch"]["autoload_hook"] is False  # our stub has no hook
    assert facts["dependents"]["torch-npu"]["requires"] == ["torch==2.14.0.*"]
