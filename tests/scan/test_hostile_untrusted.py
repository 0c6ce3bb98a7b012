"""Scan and apply on untrusted input (issue 18): a cache is data, suppression comes from real
comments only, every code a user gives is checked, .gitignore as git reads it, and the cost
of a file grows linearly with its findings. Each test names the repro it guards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile import CUDA, bounded_main, heavy, migrate

from migrate.core.rules import default_rules
from migrate.scan.engine import ScanOptions, scan_paths, scan_text

PAYLOAD = "import os; os.system('echo pwned')\n"


def _poison(cache: Path, change) -> int:
    """Apply ``change`` to every cached finding of every cache file; how many changed."""
    changed = 0
    for path in cache.glob("scan-*.json"):
        doc = json.loads(path.read_text())

        def walk(node):
            nonlocal changed
            if isinstance(node, dict):
                if "rule" in node and ("path" in node or "line" in node):
                    changed += bool(change(node))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(doc)
        path.write_text(json.dumps(doc))
    return changed


def _project(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "D"
    d.mkdir()
    (d / "a.py").write_text(CUDA)
    cache = tmp_path / "C"
    assert migrate("scan", d, "--cache-dir", cache).returncode == 1
    return d, cache


def test_cached_edits_never_reach_a_file(tmp_path):  # repro: cache trusted as code
    d, cache = _project(tmp_path)

    def inject(f):
        if f.get("fix"):
            f["fix"]["edits"].append([0, 0, PAYLOAD])
            return True
        return False

    assert _poison(cache, inject)
    r = migrate("apply", d, "--cache-dir", cache)
    assert r.returncode == 0, r.stderr
    assert (d / "a.py").read_text() == CUDA.replace("torch.cuda", "torch.npu")


def test_cached_path_outside_the_tree_is_never_written(tmp_path):  # repro: ../out/victim.py
    d, cache = _project(tmp_path)
    (tmp_path / "out").mkdir()
    victim = tmp_path / "out" / "victim.py"
    victim.write_text(CUDA)
    assert _poison(cache, lambda f: f.update(path="../out/victim.py") or True)
    for path in cache.glob("scan-*.json"):  # and an entry of its own, wherever entries are
        doc = json.loads(path.read_text())
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if isinstance(entries, dict) and "a.py" in entries:
            entries["../out/victim.py"] = entries["a.py"]
        path.write_text(json.dumps(doc))
    r = migrate("apply", d, "--cache-dir", cache)
    assert r.returncode in (0, 1), r.stderr
    assert victim.read_text() == CUDA
    assert (d / "a.py").read_text() == CUDA.replace("torch.cuda", "torch.npu")


def test_a_cache_that_hides_findings_is_not_believed(tmp_path):  # beyond the repro
    d, cache = _project(tmp_path)
    for path in cache.glob("scan-*.json"):
        doc = json.loads(path.read_text())
        text = json.dumps(doc)
        assert "MIG" in text
        path.write_text(text.replace('"findings": [{', '"findings": [], "x": [{'))
    r = migrate("scan", d, "--cache-dir", cache, "--format", "json")
    assert r.returncode == 1 and json.loads(r.stdout)["summary"]["findings"] == 1


def test_a_corrupt_cache_file_is_ignored_with_a_note(tmp_path):
    d, cache = _project(tmp_path)
    (path,) = cache.glob("scan-*.json")
    path.write_text('{"format": NaN, "entries": {')
    r = migrate("scan", d, "--cache-dir", cache, "--format", "json")
    assert r.returncode == 1 and json.loads(r.stdout)["summary"]["findings"] == 1
    assert f"migrate: note: cache file {path}: not JSON" in r.stderr, r.stderr
    again = migrate("scan", d, "--cache-dir", cache, "--format", "json", "--exit-zero")
    assert again.returncode == 0 and "note" not in again.stderr  # rewritten whole by the run


def test_cached_findings_with_other_rules_or_offsets_are_not_believed(tmp_path):
    d, cache = _project(tmp_path)

    def shift(f):
        f["rule"], f["line"] = "MIG999", 99
        if f.get("fix"):
            f["fix"]["edits"] = [[10**9, 10**9 + 5, "x"]]
        return True

    assert _poison(cache, shift)
    r = migrate("scan", d, "--cache-dir", cache, "--format", "json")
    found = json.loads(r.stdout)["findings"]
    assert [(f["rule"], f["line"]) for f in found] == [("MIG101", 2)]


@pytest.mark.parametrize("where", ["config", "flag"])
@pytest.mark.parametrize("key", ["ignore", "select", "extend-select", "per-file-ignores"])
def test_empty_codes_are_errors(tmp_path, key, where):  # repro: ignore = [""]
    (tmp_path / "a.py").write_text(CUDA)
    if where == "config":
        value = '{"*" = [""]}' if key == "per-file-ignores" else '[""]'
        (tmp_path / "pyproject.toml").write_text(f"[tool.migrate]\n{key} = {value}\n")
        r = migrate("scan", tmp_path, "--no-cache")
    else:
        arg = "*:" if key == "per-file-ignores" else ""
        r = migrate("scan", tmp_path, "--no-cache", f"--{key}", arg)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("code", ["M", "MI", " ", ",", "MIG2,"])
def test_codes_that_are_no_rule_prefix_are_errors(tmp_path, code):
    (tmp_path / "a.py").write_text(CUDA)
    r = migrate("scan", tmp_path, "--no-cache", "--ignore", code)
    assert r.returncode == 2 and "Traceback" not in r.stderr


SPOOFS = {
    "string.py": 'import torch\nt = torch.zeros(1)\ns = "# migrate: ignore"; x = t.cuda()\n',
    "fstring.py": 'import torch\nt = torch.zeros(1)\ns = f"{t} # migrate: ignore"; x = t.cuda()\n',
    "bytes.py": 'import torch\nt = torch.zeros(1)\ns = b"# migrate: ignore"; x = t.cuda()\n',
    "triple.py": 'import torch\nt = torch.zeros(1)\nx = t.cuda(); s = """# migrate: ignore"""\n',
    "multiline.py": 'import torch\nt = torch.zeros(1)\ns = """\n# migrate: ignore"""; x = t.cuda()\n',
    "run.sh": 'echo "# migrate: ignore"; export CUDA_VISIBLE_DEVICES=0\n',
    "ci.yaml": 'env:\n  cmd: "export CUDA_VISIBLE_DEVICES=0 # migrate: ignore"\n',
    "Dockerfile": 'FROM ubuntu\nRUN echo "# migrate: ignore" && export CUDA_VISIBLE_DEVICES=0\n',
}


@pytest.mark.parametrize("name", sorted(SPOOFS))
def test_suppression_is_read_from_real_comments_only(tmp_path, name):  # repro: spoofing
    (tmp_path / name).write_text(SPOOFS[name])
    found = scan_paths([tmp_path], ScanOptions(jobs=1)).findings
    assert len(found) == 1, name
    real = SPOOFS[name].rstrip("\n").replace("# migrate: ignore", "")
    (tmp_path / name).write_text(real + "  # migrate: ignore\n")
    assert scan_paths([tmp_path], ScanOptions(jobs=1)).findings == [], name


def test_empty_suppression_brackets_suppress_nothing():
    text = "import torch\ntorch.cuda.synchronize()  # migrate: ignore[]\n"
    assert len(scan_text(text, "a.py", "python", default_rules(), "npu")) == 1


def test_nested_gitignore_negation(tmp_path):  # repro: !model_gen.py
    (tmp_path / ".gitignore").write_text("model_*.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!model_gen.py\n")
    for rel in ("model_a.py", "sub/model_gen.py", "sub/model_b.py"):
        (tmp_path / rel).write_text(CUDA)
    found = {f.path for f in scan_paths([tmp_path], ScanOptions(jobs=1)).findings}
    assert found == {"sub/model_gen.py"}


def _work(monkeypatch, text: str) -> int:
    """How many statement spans the scan of ``text`` computes."""
    from migrate.core.findings import LineIndex

    calls = [0]
    real = LineIndex.span

    def counted(self, node):
        calls[0] += 1
        return real(self, node)

    monkeypatch.setattr(LineIndex, "span", counted)
    found = scan_text(text, "big.py", "python", default_rules(), "npu")
    monkeypatch.setattr(LineIndex, "span", real)
    assert found
    return calls[0]


@pytest.mark.parametrize("sep", ["\n", ";"])
def test_scan_work_grows_linearly_with_findings(monkeypatch, sep):  # repro: quadratic
    head = "import torch\nx = torch.zeros(1)\n"
    small = _work(monkeypatch, head + sep.join(["y = x.cuda()"] * 500) + "\n")
    large = _work(monkeypatch, head + sep.join(["y = x.cuda()"] * 2000) + "\n")
    assert large <= 4 * small * 1.25, (small, large)


def test_one_long_line_of_many_findings_finishes(tmp_path):  # repro: 100k on one line
    p = tmp_path / "long.py"
    p.write_text("import torch\nx = torch.zeros(1)\n" + "x.cuda();" * 5000 + "\n")
    code, out, _ = bounded_main("scan", p, "--target", "npu", "--no-cache", "--format", "json")
    assert json.loads(out)["summary"]["findings"] == 5000
    code, _, err = bounded_main("apply", p, "--target", "npu", "--no-cache", seconds=900)
    assert code == 0 and p.read_text().count("x.npu()") == 5000, err


@heavy
@pytest.mark.parametrize("sep", ["\n", ";"])
def test_a_hundred_thousand_findings_in_one_file(tmp_path, sep):  # earlier suite: timeout
    p = tmp_path / "huge.py"
    p.write_text("import torch\nx = torch.zeros(1)\n" + sep.join(["x.cuda()"] * 100_000) + "\n")
    r = migrate("scan", p, "--no-cache", "--format", "json", timeout=300)
    assert json.loads(r.stdout)["summary"]["findings"] == 100_000
    assert migrate("apply", p, "--no-cache", timeout=600).returncode == 0
    assert p.read_text().count("x.npu()") == 100_000


def test_every_file_option_refuses_fifos_and_devices(tmp_path):
    (tmp_path / "a.py").write_text(CUDA)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (
        ("scan", tmp_path, "--config", fifo),
        ("scan", tmp_path, "--config", "/dev/zero"),
        ("apply", tmp_path, "--config", fifo),
    ):
        r = migrate(*args, "--no-cache", timeout=900)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, args


def test_notebook_cells_share_their_imports(tmp_path):  # beyond: a silent loss
    cells = [
        {"cell_type": "code", "source": ["import torch\n"]},
        {"cell_type": "markdown", "source": ["# text"]},
        {"cell_type": "code", "source": ["torch.cuda.synchronize()\n"]},
    ]
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": cells}, indent=1))
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert [f.rule for f in result.findings] == ["MIG101"] and result.errors == []
    assert "[cell 3, line 1]" in result.findings[0].message
    cells.insert(2, {"cell_type": "code", "source": ["x = (\n"]})  # one cell does not parse
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": cells}, indent=1))
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert [f.rule for f in result.findings] == ["MIG101"]
    assert "cell 3 not scanned" in result.errors[0].message  # it may hide findings: exit 1


def test_notebook_source_that_is_not_text_is_an_error(tmp_path):
    cells = [{"cell_type": "code", "source": ["import torch\n", 7, "torch.cuda.synchronize()\n"]}]
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": cells}))
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert "source is not text" in result.errors[0].message


def test_gitignore_patterns_that_would_backtrack_are_refused(tmp_path):  # beyond: a hang
    (tmp_path / ".gitignore").write_text("a*a*a*a*a*a*a*a*a*a*b\nbuild/\n")
    (tmp_path / ("a" * 200 + ".py")).write_text(CUDA)
    r = migrate("scan", tmp_path, "--no-cache", "--format", "json", timeout=900)
    doc = json.loads(r.stdout)
    assert doc["summary"]["findings"] == 1
    assert "more than 3 '*'" in doc["errors"][0]["message"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-1"])
def test_effort_figures_are_finite(tmp_path, value):
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "pyproject.toml").write_text(f"[tool.migrate.effort]\nMIG101 = {value}\n")
    r = migrate("scan", tmp_path, "--no-cache")
    assert r.returncode == 2 and "minutes" in r.stderr
