"""Files a command writes at a user's request (``-o``, ``--report``, ``--output``): checked
before any work, written so that nothing else is lost.

* ``check_output(path, flag, inputs)`` — before the command reads anything: the path must
  be given (an empty one is an unset shell variable), must not be a folder, and must not be
  one of ``inputs`` (files the command reads or that an input depends on: a model's external
  data, a dump's manifest and shards, the script being run, a scanned source file). Inputs
  are compared as files (same device and inode, so a hard link or a second spelling is
  caught) and by resolved path.
* ``write_output(path, data)`` — a regular file (or a new one) is replaced atomically
  through a temporary file in its folder: a symlink planted at that name is replaced, never
  followed out of the folder, and an interrupted write leaves the old file. A character
  device (``-o /dev/null``, ``/dev/stdout``) is written in place; a FIFO only when a reader
  is there (never a hang). A symlink to a device outside /dev is replaced like any other.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError

__all__ = ["check_output", "write_output"]


def _identity(path: str | os.PathLike) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _real(path: str | os.PathLike) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


def check_output(
    path: str | os.PathLike | None, flag: str, inputs: Iterable[str | os.PathLike] = ()
) -> Path | None:
    """``path`` if it may be written (None stays None); UsageError otherwise."""
    if path is None:
        return None
    shown = escape(str(path))
    if str(path) == "":
        raise UsageError(f"{flag}: empty path")
    if "\x00" in str(path):
        raise UsageError(f"{flag} {shown}: a path cannot hold a NUL character")
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {shown}: is a folder; give a file name")
    mine, real = _identity(p), _real(p)
    for other in inputs:
        if (mine is not None and mine == _identity(other)) or real == _real(other):
            raise UsageError(
                f"{flag} {shown}: is an input of this command "
                f"({escape(str(other))}); refusing to overwrite it"
            )
    return p


def write_output(path: str | os.PathLike, data: bytes, flag: str = "-o") -> None:
    """Write ``data`` to ``path`` (see the module doc); UsageError when it cannot."""
    p = Path(path)
    shown = escape(str(p))
    try:
        st = os.stat(p)
        link = os.path.islink(p)
    except OSError:
        st, link = None, False
    try:
        streams = st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode))
        if streams and (not link or _real(p.parent).startswith(("/dev", "/proc"))):
            _write_in_place(p, data)  # -o /dev/null, /dev/stdout; not a link planted in a tree
            return
        if link:
            st = None  # a symlink is replaced by the report, never followed

        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{flag} {shown}: not a regular file; give a file name")
        folder = p.parent
        folder.mkdir(parents=True, exist_ok=True)
        _replace(p, data, st)
    except OSError as exc:
        why = "no reader on this FIFO" if exc.errno == 6 else (exc.strerror or str(exc))
        raise UsageError(f"cannot write {shown}: {why}") from None


def _write_in_place(p: Path, data: bytes) -> None:
    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _replace(p: Path, data: bytes, st: os.stat_result | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:40]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fh.fileno(), 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
