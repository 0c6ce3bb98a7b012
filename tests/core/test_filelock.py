"""The wait for a file's lock is bounded (issue 32): a line on stderr once it lasts, exit 2
with one line after $MIGRATE_LOCK_TIMEOUT; a lock released meanwhile is taken."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile import CUDA, env

from migrate.core.filelock import TIMEOUT_ENV, LockTimeout, locked


def _hold(path: Path) -> int:
    """An open file description of ``path`` holding its flock (another holder than
    ``locked``'s own open, even in this process)."""
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@pytest.mark.parametrize("files, jobs", [(1, "1"), (8, "2")])  # waited for in the parent / a worker
def test_apply_on_a_file_locked_by_another_process_ends_with_exit_2(tmp_path, files, jobs):
    for i in range(files):
        (tmp_path / f"m{i}.py").write_text(CUDA)
    held = _hold(tmp_path / "m0.py")
    try:
        r = subprocess.run(
            [sys.executable, "-m", "migrate", "apply", str(tmp_path), "--no-cache", "--jobs", jobs],
            env=env(**{TIMEOUT_ENV: "2"}),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        os.close(held)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert f"migrate: waiting for the lock on {tmp_path / 'm0.py'} held by another process" in lines
    errors = [line for line in lines if line.startswith("migrate: error:")]
    assert len(errors) == 1 and "m0.py: locked by another process; gave up after 2 s" in errors[0], lines
    assert "Traceback" not in r.stderr
    assert all((tmp_path / f"m{i}.py").read_text() == CUDA for i in range(files))  # nothing written


def test_a_bad_timeout_is_a_usage_error(tmp_path):
    (tmp_path / "a.py").write_text(CUDA)
    r = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", str(tmp_path), "--no-cache"],
        env=env(**{TIMEOUT_ENV: "soon"}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        r.returncode == 2
        and r.stderr.strip() == f"migrate: error: {TIMEOUT_ENV}=soon: not a number of seconds >= 0"
    )
    assert (tmp_path / "a.py").read_text() == CUDA


def _wait_in(where: str, path: Path) -> BaseException | None:
    """Take the lock on ``path`` in the main thread or in another one: the exception raised."""
    caught: list[BaseException] = []

    def take() -> None:
        try:
            with locked(path):
                pass
        except BaseException as exc:
            caught.append(exc)

    if where == "main":
        take()
    else:
        t = threading.Thread(target=take)
        t.start()
        t.join()
    return caught[0] if caught else None


@pytest.mark.parametrize("where", ["main", "thread"])  # the timer's wait / the polling wait
def test_the_wait_gives_up_or_takes_a_lock_released_meanwhile(tmp_path, monkeypatch, capsys, where):
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    handler = signal.getsignal(signal.SIGALRM)
    held = _hold(path)
    try:
        monkeypatch.setenv(TIMEOUT_ENV, "0")
        assert isinstance(_wait_in(where, path), LockTimeout)
        monkeypatch.setenv(TIMEOUT_ENV, "600")
        release = threading.Timer(0.1, fcntl.flock, (held, fcntl.LOCK_UN))  # the other holder lets go
        release.start()
        assert _wait_in(where, path) is None
        release.join()
    finally:
        os.close(held)
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with locked(path):  # nothing is left holding it
        pass
    assert "Traceback" not in capsys.readouterr().err
