"""Reports that stay true after a port: files are named relative to the current directory
(text, GitHub annotations, `apply --diff`, as ruff names them), so `git apply` takes the diff;
counts agree with what is left to do; the same optional dependency costs the same however
its guard is written."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.core.display import shown_path

CODE = "import torch\nx = torch.ones(2).cuda()\n"


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_shown_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shown_path("a.py", tmp_path / "proj") == "proj/a.py"
    assert shown_path("a.py", "proj") == "proj/a.py"
    assert shown_path("a.py", tmp_path.parent) == "a.py"  # not under the cwd: as reported
    assert shown_path("a.py", None) == "a.py"


def test_text_github_and_diff_name_files_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.py").write_text(CODE)
    monkeypatch.chdir(tmp_path)
    text = cli("scan", "proj", "--no-cache", "--exit-zero").stdout
    assert text.startswith("proj/a.py:2:")
    github = cli("scan", "proj", "--no-cache", "--exit-zero", "--format", "github").stdout
    assert "file=proj/a.py," in github
    doc = json.loads(cli("scan", "proj", "--no-cache", "--exit-zero", "--format", "json").stdout)
    assert doc["findings"][0]["path"] == "a.py"  # JSON: relative to the scanned folder
    diff = cli("apply", "proj", "--diff", "--no-cache").stdout
    assert diff.startswith("--- a/proj/a.py\n+++ b/proj/a.py\n")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q"], check=True)
    (tmp_path / "change.diff").write_text(diff)
    subprocess.run(["git", "apply", "change.diff"], check=True)
    assert "is_npu_available()" in (tmp_path / "proj" / "a.py").read_text()


def test_code_left_as_it_is_is_not_counted_as_work(tmp_path):
    (tmp_path / "a.py").write_text('import torch\nok = x.device.type in ("cuda", "xpu", "npu")\n')
    doc = json.loads(cli("scan", str(tmp_path), "--no-cache", "--exit-zero", "--format", "json").stdout)
    assert doc["summary"]["npu_aware"] == 1
    assert sum(doc["summary"]["by_category"].values()) == 0
    text = cli("scan", str(tmp_path), "--no-cache", "--exit-zero").stdout
    assert "auto " not in text.split("By category", 1)[1].split("\n\n")[0].replace("auto     ", "")


def test_the_tools_own_portable_forms_are_not_findings(tmp_path):
    (tmp_path / "a.py").write_text(
        CODE.replace(".cuda()", '.cuda()\nif x.device.type == "cuda":\n    pass\n')
    )
    assert cli("apply", str(tmp_path), "--no-cache").exit_code == 0
    doc = json.loads(cli("scan", str(tmp_path), "--no-cache", "--exit-zero", "--format", "json").stdout)
    assert doc["findings"] == []  # `in ("cuda", "npu")` and the helper are the port's own


@pytest.mark.parametrize(
    "guard",
    [
        "if is_bnb_available():\n    import bitsandbytes as bnb\n",
        "try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\n",
    ],
)
def test_a_guard_costs_the_same_however_it_is_written(tmp_path, guard):
    (tmp_path / "a.py").write_text(
        "import torch\n" + guard + "\ndef f(p):\n    return bnb.optim.Adam8bit(p)\n"
    )
    doc = json.loads(cli("scan", str(tmp_path), "--no-cache", "--exit-zero", "--format", "json").stdout)
    (package,) = doc["summary"]["effort"]["packages"]
    assert package["name"] == "bitsandbytes (library), guarded import"
    assert package["minutes"] == 60
