"""The four sample projects migrate to their reviewed, checked-in form."""

from __future__ import annotations

import os

import pytest

from .goldens import EXPECTED, FLAGS, NAMES, SAMPLES, files, migrate_cli, migrate_copy


@pytest.mark.parametrize("name", NAMES)
def test_sample_matches_golden(name, tmp_path):
    work = migrate_copy(name, tmp_path)
    got, want = files(work), files(EXPECTED / name)
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], f"{name}/{rel} differs from its golden"
    # Modes survive (launch.sh stays executable).
    for rel in want:
        assert os.stat(work / rel).st_mode == os.stat(SAMPLES / name / rel).st_mode, rel


@pytest.mark.parametrize("name", NAMES)
def test_golden_is_a_fixpoint(name, tmp_path):
    work = migrate_copy(name, tmp_path)
    result = migrate_cli(["apply", str(work), "--check", *FLAGS])
    assert result.exit_code == 0, result.output


def test_samples_still_need_migration(tmp_path):
    """The inputs are CUDA projects: --check fails on each of them."""
    for name in NAMES:
        result = migrate_cli(["apply", str(SAMPLES / name), "--check", *FLAGS])
        assert result.exit_code == 1, (name, result.output)
