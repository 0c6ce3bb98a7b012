"""Shared fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Shared test helpers (hostile.py, ...) import as top-level modules, whether or not the
# package under test is installed from this checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
