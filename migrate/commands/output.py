"""Writing a report: to -o FILE (core/outputs.write_output: one clear error if that fails)
or to stdout. Commands check their -o against their inputs before any work
(core/outputs.check_output)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from migrate.core.errors import UsageError
from migrate.core.outputs import write_output


def emit(text: str, output: Path | None) -> bytes:
    """Write ``text`` (a final newline added if missing) to ``output`` or stdout; return
    the bytes written."""
    if text and not text.endswith("\n"):
        text += "\n"
    data = text.encode("utf-8", errors="backslashreplace")  # a non-UTF-8 file name: \\udcff
    if output is None:
        write_stdout(data)
        return data
    write_output(output, data)  # atomic; a planted symlink is replaced, never followed
    return data


def write_stdout(data: bytes) -> None:
    """Write to stdout; a full disk or a closed pipe is one clear error, not a traceback."""
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except OSError as exc:
        quiet_stdout()
        raise UsageError(f"cannot write the report to stdout: {exc.strerror or exc}") from None


def quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
