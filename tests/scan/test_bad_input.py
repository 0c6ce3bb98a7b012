"""Bad input never ends a scan: each problem file is listed under errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from migrate.scan.engine import ScanOptions, scan_paths


def _scan(root: Path, **kw):
    return scan_paths([root], ScanOptions(jobs=1, **kw))


def test_problem_files_become_errors(tmp_path: Path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tmp_path / "py2.py").write_text('import torch\nprint "cuda", torch.cuda.is_available()\n')
    (tmp_path / "binary.py").write_bytes(b"cuda\x00\x01\x02" * 10)
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "latin1.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\nx = torch.device('cuda')\n"
    )
    (tmp_path / "bad_utf8.py").write_bytes(b"import torch\nx = '\xff\xfe cuda'\n")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\ny = 'a'.cuda()\n")
    result = _scan(tmp_path)
    errors = {e.path: e.message for e in result.errors}
    assert set(errors) == {"py2.py", "binary.py", "bad_utf8.py"}
    assert "Python 2" in errors["py2.py"]
    assert "binary" in errors["binary.py"]
    found = {(f.path, f.line, f.rule) for f in result.findings}
    assert ("ok.py", 2, "MIG202") in found
    assert ("latin1.py", 4, "MIG201") in found
    assert ("bom.py", 2, "MIG202") in found
    assert result.files_scanned == 7


def test_skipped_folders_gitignore_and_symlink_loops(tmp_path: Path):
    for folder in (".git", "node_modules", ".venv", "build_out", "pkg"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("x = y.cuda()\n")
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "m.py").write_text("x = y.cuda()\n")
    (tmp_path / ".gitignore").write_text("build_out/\n")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    result = _scan(tmp_path)
    assert [f.path for f in result.findings] == ["pkg/m.py"]
    messages = {e.path: e.message for e in result.errors}
    assert "symlink loop" in messages["pkg/loop"]
    assert "broken" in messages["dangling.py"]


def test_cache_reuses_results_and_sees_changes(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("x = y.cuda()\n")
    cache = tmp_path / "cache"
    first = _scan(src, cache_dir=cache)
    second = _scan(src, cache_dir=cache)
    assert [(f.path, f.line) for f in first.findings] == [(f.path, f.line) for f in second.findings]
    (src / "a.py").write_text("x = 1\n\nx = y.cuda()\nz = w.cuda()\n")
    third = _scan(src, cache_dir=cache)
    assert [(f.path, f.line) for f in third.findings] == [("a.py", 3), ("a.py", 4)]


def _cli(*args: str, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, cwd=cwd, timeout=900
    )


def test_cli_exit_codes(tmp_path: Path):
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(1)\n")
    missing = _cli("scan", str(tmp_path / "nope"), "--no-cache")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert _cli("scan", str(tmp_path / "a.py"), "--no-cache", "--format", "json").returncode == 1
    assert _cli("scan", str(tmp_path / "clean.py"), "--no-cache").returncode == 0
    assert _cli("scan", str(tmp_path), "--no-cache", "--exit-zero").returncode == 0
    assert _cli("scan", str(tmp_path), "--no-cache", "--fail-on", "manual").returncode == 0
    assert _cli("scan", str(tmp_path), "--no-cache", "--select", "MIG999").returncode == 2
    assert _cli("scan", str(tmp_path), "--no-cache", "--format", "xml").returncode == 2


def test_cli_json_contract_and_project_config(tmp_path: Path):
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\nd = torch.device('cuda')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\nignore = ["MIG202"]\n')
    out = _cli("scan", str(tmp_path), "--no-cache", "--format", "json")
    doc = json.loads(out.stdout)
    assert doc["tool"]["name"] == "ascend-migrate"
    assert [(f["rule"], f["path"], f["line"], f["column"]) for f in doc["findings"]] == [
        ("MIG201", "a.py", 3, 18)
    ]
    f = doc["findings"][0]
    assert set(f) >= {
        "rule",
        "name",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "category",
        "fix",
    }
    assert f["fix"]["applicability"] == "safe" and f["category"] == "auto"
    assert doc["summary"]["files_scanned"] == 2  # a.py and pyproject.toml
    assert doc["summary"]["by_rule"] == {"MIG201": 1}
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pyproject.toml").write_text('[tool.migrate]\nselct = ["MIG2"]\n')
    res = _cli("scan", str(bad), "--no-cache")
    assert res.returncode == 2 and "unknown [tool.migrate] keys: selct" in res.stderr


def _deep_tree(root: Path) -> None:
    (root / "ok.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    depth = 300
    (root / "lambdas.py").write_text("import torch\nf = " + "lambda: " * depth + "torch.zeros(1).cuda()\n")
    (root / "bracketed.py").write_text(  # Python's parser: MemoryError, not SyntaxError
        "import torch\nf = " + "(lambda: " * depth + "torch.zeros(1).cuda()" + ")" * depth + "\n"
    )


def test_deeply_nested_code_is_an_error_of_that_file_not_of_the_run(tmp_path: Path):
    _deep_tree(tmp_path)
    result = _scan(tmp_path)
    errors = {e.path: e.message for e in result.errors}
    assert set(errors) == {"bracketed.py"}, errors
    assert all("nesting too deep" in m and "internal error" not in m for m in errors.values())
    found = {f.path for f in result.findings}
    assert {"ok.py", "lambdas.py"} <= found
    scan = _cli("scan", str(tmp_path), "--no-cache", "--format", "json")
    assert scan.returncode == 1 and "Traceback" not in scan.stderr
    assert {e["path"] for e in json.loads(scan.stdout)["errors"]} == set(errors)
    apply = _cli("apply", str(tmp_path), "--no-cache")
    assert apply.returncode == 1, apply.stderr
    assert ".to(" in (tmp_path / "ok.py").read_text() and ".to(" in (tmp_path / "lambdas.py").read_text()
    assert "internal error" not in apply.stdout + apply.stderr
    assert "bracketed.py: error: cannot parse: nesting too deep" in apply.stdout + apply.stderr


def test_a_memory_error_in_a_matcher_is_that_files_error(tmp_path: Path, monkeypatch):
    """Whatever part of the scan runs out (a parser, a recursive walk), the file is named."""
    from migrate.scan import worker

    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tmp_path / "b.py").write_text("import torch\ntorch.cuda.synchronize()\n")

    def exhausted(*args):
        raise MemoryError

    monkeypatch.setitem(worker.READERS, "python", exhausted)
    result = _scan(tmp_path)
    assert [(e.path, "MemoryError" in e.message) for e in result.errors] == [("a.py", True), ("b.py", True)]
