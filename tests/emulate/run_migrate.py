"""``python -m migrate ARGS`` for the emulation tests: this checkout and this folder (the
programs' sibling modules) on PYTHONPATH, one thread, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def migrate(*args: str, cwd: Path | str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(HERE))), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
