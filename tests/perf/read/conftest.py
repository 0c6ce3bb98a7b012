"""Fixtures of the Ascend reader tests: the real profiles beside the repository, and runs
built at test time (ascend_run.py) written as text results and as .db exports."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascend_run import sample_run
from ascend_run_db import write_db
from ascend_run_text import write_text

REPO = Path(__file__).resolve().parents[3]


def _ascend_data() -> Path | None:
    for base in (REPO.parent, REPO.parent.parent):  # worktrees sit one level deeper
        path = base / "shared" / "data" / "profiles" / "ascend"
        if path.is_dir():
            return path
    return None


@pytest.fixture(scope="session")
def ascend_data() -> Path:
    found = _ascend_data()
    if found is None:
        pytest.skip("../shared/data/profiles/ascend not found beside the repository")
    return found


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sample run as a text result and as a .db export (one folder each)."""
    root = tmp_path_factory.mktemp("ascend_run")
    run = sample_run()
    return {"text": write_text(run, root / "text"), "db": write_db(run, root / "db"), "run": run}  # type: ignore[dict-item]
