"""Commands whose optional dependency is missing say which extra to install (exit 2)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

BLOCK = (
    "import sys; sys.modules[{mod!r}] = None; sys.argv = ['migrate', *{args!r}]; "
    "from migrate.cli import main; main()"
)


RECORD = {
    "name": "fc",
    "call": 0,
    "kind": "forward.output",
    "index": 0,
    "dtype": "float32",
    "shape": [2],
    "file": "t.safetensors",
    "tensor": "t0",
}


def _dump(folder, value: float) -> None:
    """A one-record dump written by hand (no numpy or torch needed to make it)."""
    folder.mkdir()
    header = json.dumps({"t0": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    (folder / "t.safetensors").write_bytes(
        struct.pack("<Q", len(header)) + header + struct.pack("<2f", value, 2.0)
    )
    (folder / "manifest.json").write_text(json.dumps({"format": 1, "meta": {}, "records": [RECORD]}))


def _run(tmp_path, repo_root, mod, args):
    (tmp_path / "model.onnx").write_bytes(b"\x08\x07")
    for name, value in (("ref", 1.0), ("tgt", 1.0)):
        _dump(tmp_path / name, value)
    return subprocess.run(
        [sys.executable, "-c", BLOCK.format(mod=mod, args=args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(repo_root)},
    )


@pytest.mark.parametrize(
    "mod,args,extra",
    [
        ("onnx", ["ops", "model.onnx"], "onnx"),
        ("numpy", ["compare", "ref", "tgt"], "torch"),
    ],
)
def test_missing_extra_is_one_clear_line(tmp_path, repo_root, mod, args, extra):
    res = _run(tmp_path, repo_root, mod, args)
    assert res.returncode == 2, res.stderr
    assert (
        res.stderr.strip() == f"migrate: error: this command needs {mod}: pip install "
        f"'ascend-migrate[{extra}]'"
    )


def test_compare_needs_no_torch(tmp_path, repo_root):
    """compare reads the shards with numpy (precision/arrays.py): a CI box that only
    compares dumps needs no torch."""
    res = _run(tmp_path, repo_root, "torch", ["compare", "ref", "tgt"])
    assert res.returncode == 0, res.stderr
    assert "PASS" in res.stdout


def test_parsing_user_code_prints_no_warning_about_it(tmp_path):
    """Python 3.12+ warns for each invalid escape in parsed code (3.11: DeprecationWarning,
    shown here with -W default); a scan of legacy code must not print them."""
    import subprocess
    import sys

    src = tmp_path / "legacy.py"
    src.write_text('import re\nimport torch\nPAT = re.compile("\\s+")\ntorch.cuda.synchronize()\n')
    for command in (["scan", str(src), "--no-cache"], ["apply", str(src), "--diff", "--no-cache"]):
        done = subprocess.run(
            [sys.executable, "-W", "default", "-m", "migrate", *command],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert "MIG101" in done.stdout or "synchronize" in done.stdout
        assert "invalid escape" not in done.stderr, done.stderr
