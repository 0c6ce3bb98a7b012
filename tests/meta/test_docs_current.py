"""docs/rules.md is generated from rules/*.yaml; it must match the table."""

from __future__ import annotations

import subprocess
import sys


def test_rules_doc_is_current(repo_root):
    out = subprocess.run([sys.executable, "-m", "migrate", "rules", "--format", "markdown"],
                         capture_output=True, text=True, check=True, timeout=60)
    committed = (repo_root / "docs" / "rules.md").read_text(encoding="utf-8")
    assert out.stdout.strip() == committed.strip(), (
        "docs/rules.md is stale: run `migrate rules --format markdown -o docs/rules.md`")
