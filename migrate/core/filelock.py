"""An advisory lock on one file while it is rewritten (``flock``), so two `migrate apply`
runs on one tree cannot interleave their read and write of that file.

A rewrite replaces the file's inode (atomic ``os.replace``), so after waiting for the lock
it is taken again if the path now names another file. Files that cannot be opened or
locked (a file system without locks) are not locked; the content re-check before the
replace (core/fileio.py) still holds.

The wait is bounded: after NOTICE_SECONDS a line on stderr says which file is waited for,
and after ``$MIGRATE_LOCK_TIMEOUT`` seconds (default 60; 0: do not wait) LockTimeout ends
the run (exit 2, one line). The wait blocks in ``flock`` (the kernel queues the waiters) and
a SIGALRM interval timer wakes it to tell and to give up; off the main thread, where
signals cannot be handled, it polls.
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError

TIMEOUT_ENV = "MIGRATE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 60.0  # seconds
NOTICE_SECONDS = 1.0
_TICK = 0.25  # seconds between the timer's checks


class LockTimeout(UsageError):
    """Another process held a file's lock for longer than the wait limit."""


def wait_limit() -> float:
    """Seconds to wait for a lock: ``$MIGRATE_LOCK_TIMEOUT`` (UsageError if it is not a
    number >= 0), else DEFAULT_TIMEOUT."""
    value = os.environ.get(TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"{TIMEOUT_ENV}={escape(value)!s}: not a number of seconds >= 0")
    return seconds


@contextmanager
def locked(path: Path | str) -> Iterator[None]:
    """Hold an exclusive advisory lock on the file at ``path`` (its current inode).

    A rewrite replaces the inode, so after waiting the lock is taken again if ``path`` now
    names another file. Files that cannot be opened or locked are not locked. LockTimeout
    when another process holds it longer than wait_limit()."""
    deadline = time.monotonic() + wait_limit()
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            yield
            return
        try:
            _acquire(fd, path, deadline)
            if _same_file(fd, path):
                break
        except LockTimeout:
            os.close(fd)
            raise
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                raise
            os.close(fd)
            yield
            return
        os.close(fd)
    else:  # pragma: no cover - replaced 100 times while we waited
        yield
        return
    try:
        yield
    finally:
        os.close(fd)


def _same_file(fd: int, path: Path | str) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _acquire(fd: int, path: Path | str, deadline: float) -> None:
    """``flock(fd, LOCK_EX)``, waiting until ``deadline`` (time.monotonic) at most."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    wait = _Wait(path, deadline)
    if threading.current_thread() is not threading.main_thread():
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                wait.check()
                time.sleep(0.05)
    wait.check()  # a limit of 0 ends here
    old = signal.signal(signal.SIGALRM, lambda signum, frame: wait.check())
    try:
        signal.setitimer(signal.ITIMER_REAL, min(_TICK, max(deadline - time.monotonic(), 0.001)), _TICK)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a handler that returns resumes it (PEP 475)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Wait:
    """Tells once that ``path`` is waited for; LockTimeout past ``deadline``."""

    def __init__(self, path: Path | str, deadline: float) -> None:
        self.path, self.deadline = path, deadline
        self.start, self.told = time.monotonic(), False

    def check(self) -> None:
        now = time.monotonic()
        if now >= self.deadline:
            raise LockTimeout(
                f"{escape(str(self.path))}: locked by another process; gave up after {wait_limit():g} s "
                f"(${TIMEOUT_ENV} sets how long to wait)"
            )
        if not self.told and now - self.start >= NOTICE_SECONDS:
            self.told = True
            try:
                sys.stderr.write(
                    f"migrate: waiting for the lock on {escape(str(self.path))} held by another process\n"
                )
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
