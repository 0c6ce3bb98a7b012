"""An advisory lock on one file while it is rewritten (``flock``), so two `migrate apply`
runs on one tree cannot interleave their read and write of that file.

A rewrite replaces the file's inode (atomic ``os.replace``), so after waiting for the lock
it is taken again if the path now names another file. Files that cannot be opened or
locked (a file system without locks) are not locked; the content re-check before the
replace (core/fileio.py) still holds.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path | str) -> Iterator[None]:
    """Hold an exclusive advisory lock on the file at ``path`` (its current inode).

    A rewrite replaces the inode, so after waiting the lock is taken again if ``path`` now
    names another file. Files that cannot be opened or locked are not locked."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, path):
                break
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
