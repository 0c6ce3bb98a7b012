"""[tool.migrate] configs and their size limit: docs/contracts.md §9 ("configs and gates
16 MB"), the same limit as a gate's (core/inputs.MAX_DOC_BYTES)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.core.errors import UsageError
from migrate.core.inputs import MAX_DOC_BYTES
from migrate.scan.config import load_config

SOURCE = "import torch\nx = torch.zeros(2).cuda()\n"


def _pyproject(path: Path, size: int) -> Path:
    """A valid pyproject.toml of ``size`` bytes: [tool.migrate] ignores MIG202, then comments."""
    head = '[tool.migrate]\nignore = ["MIG202"]\n'
    line = "# " + "x" * 97 + "\n"
    body = head + line * ((size - len(head)) // len(line))
    path.write_text(body + "#" * (size - len(body) - 1) + "\n")
    assert path.stat().st_size == size
    return path


def test_a_config_between_8_mib_and_the_contracts_16_mb_is_read(tmp_path):
    """12 MiB: was refused (8 MiB in the code), so the scan ignored the config silently."""
    cfg = _pyproject(tmp_path / "pyproject.toml", 12 << 20)
    (tmp_path / "m.py").write_text(SOURCE)
    assert load_config(tmp_path).ignore == ["MIG202"]
    assert load_config(tmp_path, cfg).ignore == ["MIG202"]
    result = CliRunner().invoke(app, ["scan", str(tmp_path), "--no-cache", "--format", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["findings"] == [] and doc["errors"] == []


def test_the_config_limit_is_the_gates_and_a_larger_explicit_config_is_a_usage_error(tmp_path):
    ok = _pyproject(tmp_path / "ok.toml", MAX_DOC_BYTES)
    assert load_config(tmp_path, ok).ignore == ["MIG202"]
    big = _pyproject(tmp_path / "big.toml", MAX_DOC_BYTES + 1)
    with pytest.raises(UsageError, match="cannot read config"):
        load_config(tmp_path, big)
    (tmp_path / "m.py").write_text(SOURCE)
    result = CliRunner().invoke(app, ["scan", str(tmp_path / "m.py"), "--config", str(big)])
    assert isinstance(result.exception, UsageError) and "file too large" in str(result.exception)
