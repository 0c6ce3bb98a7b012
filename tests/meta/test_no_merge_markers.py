"""No tracked file holds the markers of an unresolved merge (stop 40 committed one into
benchmarks/README.md: both sides of the conflict, between `<<<<<<<` and `>>>>>>>`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_MARKER = re.compile(rb"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=600
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / name for name in out.decode("utf-8", "replace").split("\0") if name]


def test_no_tracked_file_holds_merge_markers():
    hits = []
    for path in _tracked():
        if path.suffix not in (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ""):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if _MARKER.search(data):
            hits.append(str(path.relative_to(REPO)))
    assert hits == []
