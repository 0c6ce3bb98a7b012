"""The sample projects migrate to their reviewed, checked-in form, in every target."""

from __future__ import annotations

import os

import pytest

from .goldens import CASES, EXPECTED, FLAGS, NAMES, SAMPLES, files, migrate_cli, migrate_copy

IDS = [f"{t}-{n}" for n, t in CASES]


@pytest.mark.parametrize("name,target", CASES, ids=IDS)
def test_sample_matches_golden(name, target, tmp_path):
    work = migrate_copy(name, tmp_path, target)
    got, want = files(work), files(EXPECTED / target / name)
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], f"{target}/{name}/{rel} differs from its golden"
    for rel in want:  # modes survive (launch.sh stays executable); added helpers are plain files
        mode = os.stat(work / rel).st_mode
        if (SAMPLES / name / rel).exists():
            assert mode == os.stat(SAMPLES / name / rel).st_mode, rel
        else:
            assert rel.endswith("/_device.py") and not mode & 0o111, rel
    # the golden is a fixpoint: a second run changes nothing
    again = migrate_cli(["apply", str(work), "--check", *FLAGS, "--target", target])
    assert again.exit_code == 0, again.output


def test_samples_still_need_migration():
    """The CUDA-only inputs fail --check in every target."""
    for name in NAMES:
        if name == "multi_backend":
            continue
        result = migrate_cli(["apply", str(SAMPLES / name), "--check", *FLAGS, "--target", "npu"])
        assert result.exit_code == 1, (name, result.output)


def test_portable_keeps_every_cuda_arm_of_the_multi_backend_library(tmp_path):
    """Nothing already NPU-aware changes: the library's files come back byte for byte
    (without --annotate: the guarded flash_attn import is still reported)."""
    import shutil

    lib = SAMPLES / "multi_backend" / "mbk"
    for target in ("portable", "npu", "transfer"):
        work = tmp_path / target
        shutil.copytree(lib, work)
        r = migrate_cli(["apply", str(work), "--unsafe-fixes", "--no-cache", "--target", target])
        assert r.exit_code == 0, r.output
        assert files(work) == files(lib), target
