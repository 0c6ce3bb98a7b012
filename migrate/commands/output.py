"""Writing a report: to -o FILE (one clear error if that fails) or to stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError


def emit(text: str, output: Path | None) -> None:
    """Write ``text`` (a final newline added if missing) to ``output`` or stdout."""
    if text and not text.endswith("\n"):
        text += "\n"
    data = text.encode("utf-8", errors="backslashreplace")  # a non-UTF-8 file name: \\udcff
    if output is None:
        write_stdout(data)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(data)
    except OSError as exc:
        raise UsageError(f"cannot write {escape(str(output))}: {exc.strerror or exc}") from None


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
