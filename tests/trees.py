"""Small project trees written from a dict of relative paths and dedented texts."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(root: Path, files: dict[str, str]) -> None:
    """Write each text (dedented) at its path under ``root``, making the folders."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
