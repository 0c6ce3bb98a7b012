"""Where the real profiles are: ../shared/data/profiles beside the repository (importable by
every test module, unlike a conftest)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def profiles_dir() -> Path | None:
    # <repo>/../shared/data in CI and in the main checkout; worktrees sit one level deeper.
    for base in (REPO.parent, REPO.parent.parent):
        path = base / "shared" / "data" / "profiles"
        if path.is_dir():
            return path
    return None
