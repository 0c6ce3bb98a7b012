"""docs/rules.md is generated from rules/*.yaml; it must match the table."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_rules_doc_is_current(repo_root):
    out = subprocess.run(
        [sys.executable, "-m", "migrate", "rules", "--format", "markdown"],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    committed = (repo_root / "docs" / "rules.md").read_text(encoding="utf-8")
    assert out.stdout.strip() == committed.strip(), (
        "docs/rules.md is stale: run `migrate rules --format markdown -o docs/rules.md`"
    )


def test_generated_doc_lists_are_current(repo_root):
    """README's decompositions, docs/emulate.md's fused ops, docs/precision.md's metrics and
    docs/contracts.md's metric fields are generated from their registries."""
    out = subprocess.run(
        [sys.executable, str(repo_root / "tools" / "build_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr + out.stdout


def test_build_docs_names_a_stale_block(repo_root, tmp_path):
    """The check fails (not skips) on a stale block, naming file and block."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_docs", repo_root / "tools" / "build_docs.py")
    build_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_docs)
    text = "x <!-- begin generated: metrics (tools/build_docs.py) -->old<!-- end generated: metrics --> y"
    assert build_docs.render(text, "metrics", "new") == (
        "x <!-- begin generated: metrics (tools/build_docs.py) -->new<!-- end generated: metrics --> y"
    )
    with pytest.raises(SystemExit, match="no generated block 'fused-ops'"):
        build_docs.render(text, "fused-ops", "new")
