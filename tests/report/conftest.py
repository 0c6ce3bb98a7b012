"""Fixtures: a small rule pack in a tmp folder, a real-looking training project, and the
findings a scan would report on it (see report_samples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_samples import RULES_YAML, TRAIN_PY, UTIL_PY, findings_for

from migrate.core.findings import FileError, ScanResult
from migrate.core.rules import load_rules


@pytest.fixture
def rules(tmp_path: Path):
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "cuda.yaml").write_text(RULES_YAML, encoding="utf-8")
    return load_rules(folder)


@pytest.fixture
def rules_folder(tmp_path: Path, rules) -> Path:
    return tmp_path / "rules"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (root / "src" / "util.py").write_text(UTIL_PY, encoding="utf-8")
    (root / "src" / "broken.py").write_text("def f(:\n", encoding="utf-8")
    return root


@pytest.fixture
def result(project: Path) -> ScanResult:
    return ScanResult(
        findings=findings_for(TRAIN_PY, UTIL_PY),
        errors=[FileError("src/broken.py", "invalid syntax (line 1, column 7)")],
        files_scanned=3,
    )
