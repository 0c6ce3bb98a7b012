"""`migrate apply` command line: exit codes, --diff, --check, json, select/ignore, config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .goldens import REPO, migrate_cli

SRC = "import torch\n\nx = torch.zeros(2, device='cuda')\ntorch.cuda.synchronize()\n"


def project(tmp_path, text=SRC, name="train.py"):
    (tmp_path / name).write_text(text)
    return tmp_path / name


def test_in_place_then_nothing_left(tmp_path):
    p = project(tmp_path)
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert p.read_text() == ("import torch\n\nx = torch.zeros(2, device='npu')\ntorch.npu.synchronize()\n")
    assert "MIG201" in r.output and "1 file changed" in r.output
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--check", "--no-cache"])
    assert r.exit_code == 0, r.output


def test_diff_writes_nothing_and_exits_1(tmp_path):
    p = project(tmp_path)
    r = migrate_cli(["apply", "--target", "npu", str(p), "--diff", "--no-cache"])
    assert r.exit_code == 1
    assert p.read_text() == SRC
    assert "--- a/train.py\n+++ b/train.py\n" in r.stdout
    assert "\n-torch.cuda.synchronize()\n" in r.stdout
    assert "\n+torch.npu.synchronize()\n" in r.stdout


def test_diff_applies_with_git(tmp_path):
    p = project(tmp_path, SRC.replace("\n", "\r\n"))
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--diff", "--no-cache"])
    patch = tmp_path / "fix.patch"
    patch.write_bytes(r.stdout_bytes)
    subprocess.run(["git", "apply", "--unsafe-paths", str(patch)], cwd=tmp_path, check=True)
    assert p.read_bytes() == SRC.replace("cuda", "npu").replace("\n", "\r\n").encode()


def test_check_lists_files_and_exit_zero(tmp_path):
    project(tmp_path)
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--check", "--no-cache"])
    assert r.exit_code == 1 and "would change: train.py" in r.output
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--check", "--exit-zero", "--no-cache"])
    assert r.exit_code == 0


def test_clean_tree_exits_0_for_check_and_diff(tmp_path):
    project(tmp_path, "import os\nprint('cuda is fast')\n")
    for flag in ("--check", "--diff"):
        assert migrate_cli(["apply", "--target", "npu", str(tmp_path), flag, "--no-cache"]).exit_code == 0


def test_default_target_is_portable_and_keeps_cuda_working(tmp_path):
    p = project(tmp_path)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    text = p.read_text()
    assert "(torch.npu if is_npu_available() else torch.cuda).synchronize()" in text
    assert "torch_npu" not in text and "def is_npu_available() -> bool:" in text
    scan = migrate_cli(["scan", str(tmp_path), "--format", "json", "--no-cache", "--exit-zero"])
    assert json.loads(scan.stdout)["summary"]["target"] == "portable"


def test_target_from_config_and_per_path(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.migrate]\ntarget = "npu"\n[tool.migrate.per-path-target]\n"lib/*" = "portable"\n'
    )
    (tmp_path / "lib").mkdir()
    app = project(tmp_path)
    lib = project(tmp_path / "lib", name="core.py")
    r = migrate_cli(["scan", str(tmp_path), "--format", "json", "--no-cache", "--exit-zero"])
    doc = json.loads(r.stdout)
    assert doc["summary"]["target"] == "npu (lib/*: portable)"
    assert {f["path"]: f["target"] for f in doc["findings"]} == {"train.py": "npu", "lib/core.py": "portable"}
    migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert "torch.npu.synchronize()" in app.read_text()
    assert "(torch.npu if is_npu_available() else torch.cuda).synchronize()" in lib.read_text()
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\ntarget = "gpu"\n')
    bad = migrate_cli(["scan", str(tmp_path), "--no-cache"])
    assert "target 'gpu': choose one of portable, npu, transfer" in str(bad.exception)


def test_json_lists_every_edit(tmp_path):
    project(tmp_path)
    r = migrate_cli(["apply", "--target", "npu", str(tmp_path), "--diff", "--format", "json", "--no-cache"])
    doc = json.loads(r.stdout)
    assert doc["diffs"]["train.py"].startswith("--- a/train.py\n+++ b/train.py\n")
    edits = {(e["rule"], e["line"], e["before"], e["after"]) for e in doc["edits"]}
    assert ("MIG201", 3, "cuda", "npu") in edits
    assert not any(e[3] == "import torch_npu" for e in edits)  # torch.npu autoloads
    assert doc["summary"]["files_changed"] == 1 and doc["written"] is False
    assert set(doc["edits"][0]) >= {"rule", "path", "line", "before", "after"}


def test_select_and_ignore(tmp_path):
    p = project(tmp_path)
    migrate_cli(["apply", "--target", "npu", str(tmp_path), "--select", "MIG201", "--no-cache"])
    assert "device='npu'" in p.read_text() and "torch.cuda.synchronize" in p.read_text()
    p.write_text(SRC)
    migrate_cli(["apply", "--target", "npu", str(tmp_path), "--ignore", "MIG201", "--no-cache"])
    assert "device='cuda'" in p.read_text() and "torch.npu.synchronize" in p.read_text()


def test_pyproject_config_and_suppression(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\nignore = ["MIG201"]\n')
    p = project(tmp_path, SRC.replace("synchronize()", "synchronize()  # migrate: ignore"))
    migrate_cli(["apply", "--target", "npu", str(tmp_path), "--no-cache"])
    assert p.read_text() == SRC.replace("synchronize()", "synchronize()  # migrate: ignore")


def test_usage_errors_exit_2(tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "migrate", "apply", "--target", "npu", *args, "--no-cache"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )

    r = run(str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such file" in r.stderr
    project(tmp_path)
    r = run(str(tmp_path), "--format", "sarif")
    assert r.returncode == 2 and "--format" in r.stderr
    r = run(str(tmp_path), "--select", "MIG999")
    assert r.returncode == 2


def test_annotate_and_strip_round_trip(tmp_path):
    from migrate.core.rules import default_rules, load_rules
    from migrate.fix.rewrite import Options, rewrite_file
    from migrate.fix.run import engine_scan

    rules = [*default_rules(), *load_rules(Path(__file__).parent / "fixtures")]
    src = (
        "import torch\nfrom torch.utils.cpp_extension import load\n\n\ndef build():\n"
        "    return load('k', ['k.cu'], verbose=True)\n"
    )
    p = project(tmp_path, src)

    def run(**kw):
        return rewrite_file(p, "train.py", "python", rules, engine_scan, Options(**kw))

    out = run(annotate=True)
    assert out.error is None and out.annotated
    text = p.read_text()
    assert (
        "import torch\n# migrate[MIG902]: `torch.utils.cpp_extension.load` builds CUDA code;"
        " port the kernel to an Ascend C operator\nfrom torch.utils"
    ) in text
    assert run(annotate=True).written is False  # idempotent
    assert p.read_text() == text
    run(strip=True)
    assert p.read_text() == src


def test_diff_keeps_stdout_a_clean_patch_and_summarises_on_stderr(tmp_path):
    project(tmp_path)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "apply",
            "--target",
            "npu",
            str(tmp_path),
            "--diff",
            "--no-cache",
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1
    assert r.stdout.startswith("--- a/train.py\n") and "MIG" not in r.stdout
    assert "1 file would change" in r.stderr and "MIG201" in r.stderr
