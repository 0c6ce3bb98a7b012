"""Commands whose optional dependency is missing say which extra to install (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BLOCK = "import sys; sys.modules[{mod!r}] = None; sys.argv = ['migrate', *{args!r}]; " \
        "from migrate.cli import main; main()"


@pytest.mark.parametrize("mod,args,extra", [
    ("onnx", ["ops", "model.onnx"], "onnx"),
    ("torch", ["compare", "ref", "tgt"], "torch"),
])
def test_missing_extra_is_one_clear_line(tmp_path, repo_root, mod, args, extra):
    (tmp_path / "model.onnx").write_bytes(b"\x08\x07")
    for name in ("ref", "tgt"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text('{"format": 1, "meta": {}, "records": []}')
    res = subprocess.run([sys.executable, "-c", BLOCK.format(mod=mod, args=args)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(repo_root)})
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == f"migrate: error: this command needs {mod}: pip install " \
                                 f"'ascend-migrate[{extra}]'"
