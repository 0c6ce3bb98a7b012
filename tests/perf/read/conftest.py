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
def perf_loaded() -> None:
    """The CLI and every reader and detector imported (and the catalog checked) in this
    process, so that each forked `migrate perf` of the hostile tests starts at once."""
    import migrate.cli  # noqa: F401
    import migrate.commands.perf  # noqa: F401
    from migrate.perf.catalog import DETECTORS, catalog
    from migrate.perf.read import ascend, ascend_db, cluster, kineto  # noqa: F401

    catalog()
    list(DETECTORS.items())


@pytest.fixture(scope="session")
def gzip_bomb(tmp_path_factory) -> Path:
    """A gzip file of some 250 KB that inflates to 256 MiB of spaces: past the 200x its size
    (+ 16 MiB) a gzip'd profile file may inflate to (read/jsonstream.py MAX_RATIO)."""
    import gzip

    path = tmp_path_factory.mktemp("bomb") / "bomb.gz"
    block = b" " * (16 << 20)
    with gzip.open(path, "wb", compresslevel=1) as fh:
        for _ in range(16):
            fh.write(block)
    return path


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sample run as a text result and as a .db export (one folder each)."""
    root = tmp_path_factory.mktemp("ascend_run")
    run = sample_run()
    return {"text": write_text(run, root / "text"), "db": write_db(run, root / "db"), "run": run}  # type: ignore[dict-item]
