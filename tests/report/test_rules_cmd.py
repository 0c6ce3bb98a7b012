"""`migrate rules [ID]`: the rule table and one rule's doc, from a rules folder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from report_samples import RULES_YAML
from typer.testing import CliRunner

from migrate.cli import app
from migrate.report.ruledoc import anchor

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, ["rules", *args])


def test_rule_table(rules_folder):
    res = _run("--rules-dir", str(rules_folder))
    assert res.exit_code == 0, res.output
    rows = [line.split() for line in res.output.splitlines()]
    assert rows[0] == ["Code", "Name", "Category", "Fix", "Kind"]
    assert rows[1:4] == [
        ["MIG101", "torch-cuda-api", "auto", "safe", "qualified-name"],
        ["MIG120", "nccl-backend-string", "assisted", "unsafe", "context-string"],
        ["MIG301", "cuda-extension-build", "manual", "none", "qualified-name"],
    ]


@pytest.mark.parametrize("key", ["MIG101", "mig101", "torch-cuda-api"])
def test_one_rule_doc(rules_folder, key):
    res = _run(key, "--rules-dir", str(rules_folder))
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.startswith("# MIG101 torch-cuda-api\n")
    sections = re.findall(r"^## (.+)$", out, flags=re.M)
    assert sections == ["What it does", "Why is this bad?", "Example", "Fix safety", "Examples"]
    row = yaml.safe_load(RULES_YAML)["rules"][0]
    assert row["doc"]["why"].strip() in out
    before, after = row["examples"][0]["before"], row["examples"][0]["after"]
    assert f"Before:\n\n```python\n{before}```" in out
    assert f"After (`--target npu`):\n\n```python\n{after}```" in out
    assert "No change (the rule must not fire):" in out
    assert "`migrate apply` makes it" in out and "- Adds: `import torch_npu`" in out


def test_manual_rule_examples_have_no_after(tmp_path):
    row = yaml.safe_load(RULES_YAML)["rules"][2]
    row["examples"] = [{"before": "ext = CUDAExtension('k', ['k.cu'])\n"}]
    (tmp_path / "one.yaml").write_text(yaml.safe_dump({"rules": [row]}))
    out = _run("MIG301", "--rules-dir", str(tmp_path)).output
    code = "ext = CUDAExtension('k', ['k.cu'])"
    assert f"Flagged (no automatic fix):\n\n```python\n{code}\n```" in out
    assert "After (" not in out


def test_markdown_example_is_kept_as_written(rules_folder):
    out = _run("MIG120", "--rules-dir", str(rules_folder)).output
    assert '## Example\n\n```python\ndist.init_process_group(backend="nccl")\n```' in out
    assert "```python\n```python" not in out


def test_json_matches_the_yaml(rules_folder):
    rows = yaml.safe_load(RULES_YAML)["rules"]
    data = json.loads(_run("--format", "json", "--rules-dir", str(rules_folder)).output)
    assert [d["code"] for d in data] == [r["code"] for r in rows]
    assert [d["fix"] for d in data] == ["safe", "unsafe", "none"]
    assert data[2]["effort"] == {"minutes": 240, "per": "file"}
    assert data[2]["params"] == rows[2]["params"]
    one = json.loads(_run("MIG301", "-f", "json", "--rules-dir", str(rules_folder)).output)
    assert one["doc"]["why"] == rows[2]["doc"]["why"].strip()


def test_markdown_page_links_resolve(rules_folder, tmp_path):
    target = tmp_path / "rules.md"
    res = _run("--format", "markdown", "-o", str(target), "--rules-dir", str(rules_folder))
    assert res.exit_code == 0 and res.output == ""
    page = target.read_text()
    links = re.findall(r"\]\(#([^)]+)\)", page)
    # GitHub's heading anchors: lower-case, punctuation dropped, spaces to hyphens.
    headings = [
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^## (.+)$", page, flags=re.M)
    ]
    assert links == ["mig101-torch-cuda-api", "mig120-nccl-backend-string", "mig301-cuda-extension-build"]
    assert set(links) <= set(headings)
    assert page.count("### What it does") == 3


def test_unknown_rule_is_one_line_and_exit_2(rules_folder):
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "rules", "MIG999", "--rules-dir", str(rules_folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "migrate: error: unknown rule 'MIG999' (run `migrate rules` to list them)"
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "html"], "unknown format 'html'"),
        (["--rules-dir", "/nonexistent/rules"], "does not exist"),
    ],
)
def test_usage_errors(rules_folder, args, message):
    if "--rules-dir" not in args:
        args = [*args, "--rules-dir", str(rules_folder)]
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "rules", *args], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_bad_rule_file_is_a_usage_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("rules:\n  - code: X1\n    name: a\n")
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "rules", "--rules-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("migrate: error: bad rule file")


def test_shipped_rules_render_in_every_format():
    from migrate.core.resources import rules_dir
    from migrate.core.rules import load_rules

    try:
        shipped = load_rules(rules_dir())
    except FileNotFoundError:
        pytest.skip("no rules/ folder on this branch yet")
    if not shipped:
        pytest.skip("rules/ has no rules yet")
    listing = runner.invoke(app, ["rules"]).output
    page = runner.invoke(app, ["rules", "-f", "markdown"]).output
    for rule in shipped:
        assert rule.code in listing
        doc = runner.invoke(app, ["rules", rule.code]).output
        assert doc.startswith(f"# {rule.code} {rule.name}")
        assert f"(#{anchor(rule)})" in page
