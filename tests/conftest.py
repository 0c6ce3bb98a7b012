"""Shared fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Shared test helpers (hostile.py, ...) import as top-level modules, whether or not the
# package under test is installed from this checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The maintainers' tools (tools/npu_wheel.py: the torch_npu wheel reader, which downloads the
# wheel) are not part of the shipped package; tests import them from the checkout.
sys.path.insert(1, str(REPO / "tools"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
