"""Run a snippet of Python in a laid-out tree, as a user would after a port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def python_in(tree: Path, code: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python -c code`` run from ``tree`` (on its path), output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        timeout=timeout,
    )
