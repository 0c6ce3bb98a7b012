"""The import layers of the package (pyproject.toml [tool.importlinter], checked with
import-linter): commands > fix, report, precision, emulate > scan > ops > core, nothing
imports upward, command modules do not borrow from each other, and no modules or packages
that are siblings import each other in a cycle."""

from __future__ import annotations

import shutil
import subprocess
import sys


def test_import_contracts_are_kept(repo_root):
    tool = shutil.which("lint-imports") or str(sys.prefix + "/bin/lint-imports")
    out = subprocess.run(
        [tool, "--config", str(repo_root / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=repo_root,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout
