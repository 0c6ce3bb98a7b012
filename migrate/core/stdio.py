"""Standard streams the caller closed (``migrate scan a.py >&-``, ``2>&-``, ``<&-``).

Python starts with ``sys.stdout`` None when descriptor 1 is closed, and the next file the
process opens would take descriptor 1: a worker's or a library's stray print would then
land in a report or a rewritten source. ``guard()``, the first thing the command line
does, puts ``/dev/null`` on every closed descriptor (so none is reused) and makes a closed
stdout a stream whose writes fail with EBADF: a command that writes its report to stdout
then ends with one line on stderr and exit 2 (``commands/output.write_stdout``), as ruff
does, and one that writes to ``-o FILE`` does not need stdout at all. A closed stderr or
stdin reads as ``/dev/null``."""

from __future__ import annotations

import errno
import io
import os
import sys


class _Closed(io.RawIOBase):
    """A write end that is not there: every write fails as writing to a closed fd does."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def fileno(self) -> int:
        raise io.UnsupportedOperation("stdout was closed by the caller")

    def isatty(self) -> bool:
        return False


def closed_stdout() -> io.TextIOWrapper:
    """A text stream (with a binary ``buffer``) whose writes raise OSError(EBADF)."""
    return io.TextIOWrapper(_Closed(), encoding="utf-8", errors="backslashreplace", write_through=True)  # type: ignore[arg-type]


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def guard() -> None:
    """Closed standard descriptors get ``/dev/null`` (never reused by a later open); a
    closed stdout fails each write, a closed stderr or stdin is ``/dev/null``."""
    closed = [fd for fd in (0, 1, 2) if _closed(fd)]
    for fd in closed:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if 0 in closed:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin
    if 1 in closed:
        sys.stdout = closed_stdout()
    if 2 in closed:
        sys.stderr = open(os.devnull, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
