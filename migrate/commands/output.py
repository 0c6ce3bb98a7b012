"""Writing a report: to -o FILE (one clear error if that fails) or to stdout."""

from __future__ import annotations

import sys
from pathlib import Path

from migrate.core.errors import UsageError


def emit(text: str, output: Path | None) -> None:
    """Write ``text`` (a final newline added if missing) to ``output`` or stdout."""
    if text and not text.endswith("\n"):
        text += "\n"
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
