"""Work that must stay linear in what a hostile file or tree holds (issue 18 leftovers):
a file with thousands of device rewrites, a tree nested hundreds of folders deep, and glob
config keys that cannot match. Linearity is shown by counting the per-file or per-folder
work (a walk of the module body, a path resolution), never by timing; the speed itself is
measured by benchmarks/bench_robust.py."""

from __future__ import annotations

import os

import pytest
from hostile import main

from migrate.scan.engine import ScanOptions, scan_paths


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


# -- a file with thousands of portable rewrites ----------------------------------------------


def test_device_variable_lookup_walks_each_body_once(tmp_path, monkeypatch):
    """`x.cuda()` -> `x.to(device)` asked for the `device` assignments of the module body
    once per finding: 4,000 lines took 51 s (quadratic). Now once per body and name."""
    from migrate.scan.python import device_names

    n = 400
    (tmp_path / "a.py").write_text(
        "import torch\nx = torch.zeros(1)\n"
        + "x.cuda()\n" * n
        + "device = torch.device('cuda')\n"
        + "x.cuda()\n" * n
        + "def f(y):\n    device = torch.device('cuda')\n    return y.cuda(), y.cuda()\n"
    )
    calls = _counting(monkeypatch, device_names, "_assignments")
    result = scan_paths([tmp_path], ScanOptions(jobs=1))  # the default target: portable
    fixes = ["".join(e.content for e in f.fix.edits) for f in result.findings if f.rule == "MIG202"]
    assert len(fixes) == 2 * n + 2
    assert len(calls) <= 4  # the module body and f's body, for "device"
    # before the assignment the port's check; after it (and in f) the variable
    assert all("is_npu_available()" in fix for fix in fixes[:n])
    assert all("device" in fix and "is_npu_available" not in fix for fix in fixes[n:])


def test_annotate_and_fix_thousands_of_lines(tmp_path, capsys):
    """apply --annotate on a file whose every line holds a manual finding and a fix
    (2,000 such lines took 159 s; the speed is bench_robust.py --only annotate)."""
    n = 500
    src = tmp_path / "a.py"
    src.write_text("import torch\n" + "torch.backends.cudnn.benchmark = True; x.cuda()\n" * n)
    code, out, err = main(capsys, "apply", src, "--annotate", "--no-cache", "--target", "npu")
    assert code == 0, err
    text = src.read_text()
    assert text.count("# migrate[MIG401]") == n and text.count("x.npu()") == n
    code, out, err = main(capsys, "apply", src, "--annotate", "--no-cache", "--target", "npu")
    assert src.read_text() == text  # annotating twice adds nothing


# -- deep trees ------------------------------------------------------------------------------


def _nest(root, depth: int):
    path = root.joinpath(*["d"] * depth)
    path.mkdir(parents=True)
    return path


def test_walk_resolves_each_folder_from_its_parent(tmp_path, monkeypatch):
    """Every folder of the walk was resolved again with realpath (lstat per component):
    a file under 900 folders took 66 s. Now a folder's real path is its parent's plus
    its name; only the given paths and symlinks are resolved."""
    from migrate.scan import discover

    deep = _nest(tmp_path, 60)
    (deep / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    calls = _counting(monkeypatch, discover.os.path, "realpath")
    walker = discover.Walker(tmp_path, [])
    found = list(walker.walk([tmp_path]))
    assert [f.rel for f in found] == ["d/" * 60 + "a.py"]
    assert len(calls) <= 5  # the given path and the scan root, not one per folder
    assert found[0].real == os.path.realpath(deep / "a.py")


def test_folders_past_the_depth_limit_are_reported_not_walked(tmp_path, capsys):
    from migrate.scan.discover import MAX_DEPTH

    shallow = _nest(tmp_path, 5)
    (shallow / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    deep = _nest(shallow / "x", MAX_DEPTH + 10)
    (deep / "b.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    code, out, err = main(capsys, "scan", tmp_path, "--no-cache", "--format", "json")
    import json

    doc = json.loads(out)
    assert code == 1
    assert [f["path"] for f in doc["findings"]] == ["d/d/d/d/d/a.py"]
    (error,) = doc["errors"]
    assert f"nested more than {MAX_DEPTH} levels deep" in error["message"]
    assert error["path"].count("/") == MAX_DEPTH  # the first folder not walked
    code, out, err = main(capsys, "apply", tmp_path, "--no-cache", "--target", "npu")
    assert "torch.cuda" in (deep / "b.py").read_text()  # not rewritten: not scanned
    assert "torch.npu" in (shallow / "a.py").read_text()


def test_nested_gitignores_judge_paths_from_their_own_folder(tmp_path):
    """The .gitignore verdicts work on paths relative to the scan root (no Path.relative_to
    per entry and per .gitignore): a sub-folder's negation still wins over its parent's."""
    sub = _nest(tmp_path, 3)
    (tmp_path / ".gitignore").write_text("*_gen.py\nbuild/\n")
    (sub / ".gitignore").write_text("!model_gen.py\n")
    for where in (tmp_path, sub):
        for name in ("model_gen.py", "other_gen.py", "ok.py"):
            (where / name).write_text("import torch\ntorch.cuda.synchronize()\n")
    (sub / "build").mkdir()
    (sub / "build" / "x.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert sorted(f.path for f in result.findings) == ["d/d/d/model_gen.py", "d/d/d/ok.py", "ok.py"]
    # given a sub-folder, its own .gitignore files are judged from where they sit
    (tmp_path / "d" / ".gitignore").write_text("ok.py\n")
    result = scan_paths([tmp_path / "d"], ScanOptions(jobs=1))
    assert sorted(f.path for f in result.findings) == [
        "d/d/build/x.py",
        "d/d/model_gen.py",
        "d/d/other_gen.py",
    ]


# -- glob config keys ------------------------------------------------------------------------

BAD_GLOBS = ["", "  ", "[", "src/[ab", "a[!", "x\x00y", "a\nb"]


@pytest.mark.parametrize("glob", BAD_GLOBS)
@pytest.mark.parametrize(
    "key",
    ["per-path-target", "per-file-ignores", "exclude", "extend-exclude"],
)
def test_invalid_globs_in_the_config_are_errors_naming_file_and_key(tmp_path, key, glob):
    from migrate.core.errors import UsageError
    from migrate.scan.config import load_config

    quoted = glob.replace("\\", "\\\\").replace("\x00", "\\u0000").replace("\n", "\\n")
    if key == "per-path-target":
        body = f'[tool.migrate.per-path-target]\n"{quoted}" = "npu"\n'
    elif key == "per-file-ignores":
        body = f'[tool.migrate.per-file-ignores]\n"{quoted}" = ["MIG201"]\n'
    else:
        body = f'[tool.migrate]\n{key} = ["{quoted}"]\n'
    (tmp_path / "pyproject.toml").write_text(body)
    with pytest.raises(UsageError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert str(tmp_path / "pyproject.toml") in message and key in message
    assert "\n" not in message


@pytest.mark.parametrize("glob", ["[]]", "[!a]*.py", "src/**", "[[]x", "a]b"])
def test_valid_globs_are_kept(tmp_path, glob):
    from migrate.scan.config import load_config

    (tmp_path / "pyproject.toml").write_text(f'[tool.migrate.per-path-target]\n"{glob}" = "npu"\n')
    assert load_config(tmp_path).per_path_target == {glob: "npu"}


def test_bad_globs_stop_scan_and_apply_with_exit_2(tmp_path, capsys):
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    (tmp_path / "pyproject.toml").write_text('[tool.migrate.per-path-target]\n"[" = "npu"\n')
    for cmd in ("scan", "apply"):
        code, out, err = main(capsys, cmd, tmp_path, "--no-cache")
        assert code == 2 and "per-path-target" in err and err.count("\n") == 1
    (tmp_path / "pyproject.toml").unlink()
    for args in (("--exclude", ""), ("--exclude", "lib/[x"), ("--per-file-ignores", "[:MIG201")):
        for cmd in ("scan", "apply"):
            if cmd == "apply" and args[0] == "--per-file-ignores":
                continue
            code, out, err = main(capsys, cmd, tmp_path, "--no-cache", *args)
            assert code == 2 and args[0] in err and err.count("\n") == 1, (cmd, args, err)
    assert "torch.cuda" in (tmp_path / "a.py").read_text()


@pytest.mark.parametrize("kind", ["fifo", "device", "dangling link"])
def test_a_pyproject_that_is_not_a_file_is_not_passed_over(tmp_path, capsys, kind):
    """A pyproject.toml FIFO, device link or dangling link was skipped as if absent (a
    parent's config, or none, was used) and apply rewrote files it may have excluded."""
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    cfg = tmp_path / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(cfg)
    else:
        os.symlink("/dev/zero" if kind == "device" else "nope.toml", cfg)
    code, out, err = main(capsys, "apply", tmp_path, "--no-cache")
    assert code == 2 and "cannot read config" in err and err.count("\n") == 1
    assert "torch.cuda" in (tmp_path / "a.py").read_text()
