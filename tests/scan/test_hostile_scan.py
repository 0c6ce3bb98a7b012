"""Scan under hostile and unlucky input (issue 13): never hang, never crash, never lose a
finding silently. Each test names the defect it guards."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from hostile import CUDA, as_nobody, migrate, needs_nobody, shared_dir

from migrate.scan.engine import ScanOptions, scan_paths


def _scan(*paths, **kw):
    return scan_paths(list(paths), ScanOptions(jobs=1, **kw))


def test_fifos_under_scanned_names_do_not_hang(tmp_path):  # defect 3
    (tmp_path / "ok.py").write_text(CUDA)
    for name in ("x.py", "Dockerfile", "requirements.txt", "run"):
        os.mkfifo(tmp_path / name)
    for cmd in ("scan", "apply"):
        r = migrate(cmd, tmp_path, "--no-cache", "--format", "json", timeout=900)
        doc = json.loads(r.stdout)
        assert r.returncode == 1
        errors = {e["path"]: e["message"] for e in doc["errors"]}
        assert {"x.py", "Dockerfile", "requirements.txt"} <= set(errors)
        assert all("not a regular file" in m for m in errors.values())
    assert "torch.npu.synchronize" in (tmp_path / "ok.py").read_text()


def test_device_files_are_never_read_endlessly(tmp_path):  # defect 3
    os.symlink("/dev/zero", tmp_path / "zero.py")
    os.symlink("/dev/urandom", tmp_path / "rand.py")
    r = migrate("scan", tmp_path, "--no-cache", "--format", "json", "--follow-symlinks")
    errors = {e["path"]: e["message"] for e in json.loads(r.stdout)["errors"]}
    assert "not a regular file" in errors["zero.py"] and "not a regular file" in errors["rand.py"]
    r = migrate("scan", tmp_path / "zero.py", "--no-cache", "--format", "json")
    assert r.returncode == 2 and "not a regular file" in r.stderr  # named: a usage error


def test_oversized_file_is_an_error(tmp_path, monkeypatch):  # defect 3
    from migrate.core import fileio

    (tmp_path / "big.py").write_text(CUDA + "#" * 5000 + "\n")
    monkeypatch.setattr(fileio, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(fileio.read_bytes, "__defaults__", (1000,))
    result = _scan(tmp_path)
    assert "too large" in result.errors[0].message


def _scan_and_apply(root):
    """(scan errors, apply errors) as {path: message}, through the library."""
    from migrate.core.rules import default_rules
    from migrate.fix.rewrite import Options
    from migrate.fix.run import apply_scan

    result = _scan(root)
    run = apply_scan(result, root, default_rules(), Options())
    return ({e.path: e.message for e in result.errors}, {e.path: e.message for e in run.errors})


@needs_nobody
def test_unreadable_folder_and_file_are_errors_not_tracebacks():  # defect 2
    root = shared_dir()
    warm = shared_dir()
    try:
        (warm / "w.py").write_text(CUDA)
        _scan_and_apply(warm)  # import everything the child needs while still root
        (root / "ok.py").write_text(CUDA)
        os.chmod(root / "ok.py", 0o666)
        (root / "closed").mkdir()
        (root / "closed" / "m.py").write_text(CUDA)
        os.chmod(root / "closed", 0)
        (root / "secret.py").write_text(CUDA)
        os.chmod(root / "secret.py", 0)
        scan_errors, apply_errors = as_nobody(_scan_and_apply, root)
        assert "cannot read folder" in scan_errors["closed"]
        assert "cannot read" in scan_errors["secret.py"]
        assert set(apply_errors) == {"closed", "secret.py"}
        assert "is_npu_available()" in (root / "ok.py").read_text()  # the default: portable
    finally:
        os.chmod(root / "closed", 0o755)
        shutil.rmtree(root)
        shutil.rmtree(warm)


def test_long_line_snippets_are_windows(tmp_path):  # defect 4
    from migrate.core.findings import SNIPPET_MAX

    line = "x.cuda();" * 5000
    (tmp_path / "long.py").write_text("import torch\nx = torch.zeros(1)\n" + line + "\n")
    result = _scan(tmp_path)
    assert len(result.findings) == 5000
    assert all(len(f.snippet) <= SNIPPET_MAX for f in result.findings)
    last = result.findings[-1]
    shown = last.snippet[last.column - 1 - last.snippet_start :][:6]
    assert shown == ".cuda(" or shown == "cuda()"


def test_text_report_underlines_inside_a_window(tmp_path):  # defect 4
    (tmp_path / "w.py").write_text("import torch\nx = torch.zeros(1)\n" + "y = 1; " * 300 + "x.cuda()\n")
    out = migrate("scan", tmp_path, "--no-cache").stdout
    code, marks = [ln for ln in out.splitlines() if ln.startswith(("3 |", "  |"))][1:3]
    start = marks.index("^")
    assert code[start : start + 4] == "cuda"


def test_utf16_and_utf32_files_are_decoded_before_the_prefilter(tmp_path):  # defect 9
    (tmp_path / "u16.py").write_bytes(CUDA.encode("utf-16"))
    (tmp_path / "u32.py").write_bytes(CUDA.encode("utf-32"))
    (tmp_path / "u16be.sh").write_bytes(b"\xfe\xff" + "export CUDA_VISIBLE_DEVICES=0\n".encode("utf-16-be"))
    paths = {f.path for f in _scan(tmp_path).findings}
    assert {"u16.py", "u32.py", "u16be.sh"} <= paths


def test_undecodable_files_without_cuda_tokens_are_errors(tmp_path):  # defect 9
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n")
    errors = {e.path: e.message for e in _scan(tmp_path).errors}
    assert "encoding" in errors["latin.py"]
    assert "binary" in errors["nul.py"]
    assert "invalid TOML" in errors["pyproject.toml"]


def test_file_errors_fail_the_run(tmp_path):  # defect 9
    (tmp_path / "bad.py").write_text("import torch\ntorch.cuda.x(\n")
    r = migrate("scan", tmp_path, "--no-cache")
    assert r.returncode == 1
    assert "All checks passed" not in r.stdout and "1 error" in r.stdout
    assert migrate("scan", tmp_path, "--no-cache", "--exit-zero").returncode == 0


def test_bad_gitignore_lines_and_self_loop_link(tmp_path):  # defect 10
    (tmp_path / ".gitignore").write_text("!\nfoo\\\nbuild/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "b.py").write_text(CUDA)
    (tmp_path / "a.py").write_text(CUDA)
    os.symlink("loop.py", tmp_path / "loop.py")
    result = _scan(tmp_path)
    assert [f.path for f in result.findings] == ["a.py"]
    assert "invalid pattern" in {e.path: e.message for e in result.errors}[".gitignore"]
    r = migrate("scan", tmp_path / "loop.py", "--no-cache", "--format", "json")
    assert r.returncode == 2 and "symbolic links" in r.stderr  # named: a usage error


def test_non_utf8_and_control_character_names_in_every_format(tmp_path):  # defects 10, 14
    evil = b"x\n::warning file=evil.py::injected\n.py"
    (tmp_path / os.fsdecode(evil)).write_text(CUDA)
    (tmp_path / os.fsdecode(b"bad\xff.py")).write_text(CUDA)
    for fmt in ("text", "json", "sarif", "markdown", "github"):
        r = migrate("scan", tmp_path, "--no-cache", "--format", fmt)
        assert r.returncode == 1, r.stderr
        assert not any(ln.startswith("::warning file=evil.py") for ln in r.stdout.splitlines())
        if fmt in ("json", "sarif"):
            json.loads(r.stdout)
    out = tmp_path.parent / "report.sarif"
    assert migrate("scan", tmp_path, "--no-cache", "--format", "sarif", "-o", out).returncode == 1
    uris = [
        x["physicalLocation"]["artifactLocation"]["uri"]
        for run in json.loads(out.read_text())["runs"]
        for res in run["results"]
        for x in res["locations"]
    ]
    assert "bad%FF.py" in uris
    text = migrate("scan", tmp_path, "--no-cache").stdout
    assert "x\\n::warning file=evil.py::injected\\n.py:2:1" in text


def test_stdout_on_a_full_disk_is_one_line(tmp_path):  # defect 10
    (tmp_path / "a.py").write_text(CUDA)
    with open("/dev/full", "w") as full:
        for fmt in ("text", "json"):
            r = migrate("scan", tmp_path, "--no-cache", "--format", fmt, stdout=full)
            assert r.returncode == 2 and "No space left" in r.stderr
        r = migrate("apply", tmp_path, "--diff", "--no-cache", stdout=full)
        assert r.returncode == 2 and "No space left" in r.stderr


@pytest.mark.parametrize(
    "content",
    [
        b"[1, 2]",
        b"\x80\x04garbage",
        b'{"format": 2, "entries": {"a.py": 3}}',
        b'{"format": 2, "entries": {"a.py": {"size": "x"}}}',
        b"[" * 100000,
    ],
)
def test_cache_of_the_wrong_shape_is_ignored(tmp_path, content):  # defect 10, 14
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.py").write_text(CUDA)
    cache = tmp_path / "cache"
    first = _scan(tmp_path / "t", cache_dir=cache)
    files = list(cache.iterdir())
    assert [f.suffix for f in files] == [".json"]  # a data format, not a pickle
    json.loads(files[0].read_text())
    files[0].write_bytes(content)
    again = _scan(tmp_path / "t", cache_dir=cache)
    assert [f.rule for f in again.findings] == [f.rule for f in first.findings]


def test_cache_hit_needs_the_content_hash(tmp_path):  # defect 1
    t = tmp_path / "t"
    t.mkdir()
    p = t / "a.py"
    p.write_text("import torch\nx = torch_accelerator_module.cuda()\n")
    cache = tmp_path / "cache"
    _scan(t, cache_dir=cache)
    st = p.stat()
    p.write_text("import torch\ny = torch_accelerator_moduleZ + 11111\n"[: st.st_size])
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _scan(t, cache_dir=cache, trust_mtime=False).findings == []


def test_cache_save_on_a_full_disk_leaves_no_temp_file(tmp_path, monkeypatch):  # defect 13
    from migrate.scan import cache as cache_mod

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.py").write_text(CUDA)
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd, *a):
            self.fh = real_fdopen(fd, *a)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_mod.os, "fdopen", Full)
    _scan(tmp_path / "t", cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_one_file_by_two_spellings_is_reported_once(tmp_path, monkeypatch):  # defect 11
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.py").write_text(CUDA)
    os.symlink("a.py", tmp_path / "t" / "alias.py")
    for paths in (["t/a.py", "t"], ["t", str(tmp_path / "t")], ["t", "t"], ["./t", "t/../t"]):
        result = scan_paths([*map(type(tmp_path), paths)], ScanOptions(jobs=1))
        assert len(result.findings) == 1, paths


def test_jobs_are_clamped_and_nonsense_is_refused(tmp_path):  # defect 11
    from migrate.scan.worker import clamp_jobs

    (tmp_path / "a.py").write_text(CUDA)
    assert clamp_jobs(999, 3) <= min(os.cpu_count() or 1, 3)
    assert clamp_jobs(10**20, 1) == 1 and clamp_jobs(None, 0) == 1
    for bad in ("0", "-3"):
        r = migrate("scan", tmp_path, "--jobs", bad, "--no-cache")
        assert r.returncode == 2 and "--jobs" in r.stderr
    for big in ("999", "99999999999999999999"):
        assert migrate("scan", tmp_path, "--jobs", big, "--no-cache", timeout=900).returncode == 1


def test_cr_only_and_lone_cr_lines(tmp_path):  # defect 12
    (tmp_path / "cr.py").write_bytes(b"import torch\rx = 1\rtorch.cuda.synchronize()\r")
    (tmp_path / "lone.py").write_bytes(b"import torch\nx = 1 \r\ny = 2\n\rtorch.cuda.synchronize()\n")
    found = {f.path: f.line for f in _scan(tmp_path).findings}
    assert found == {"cr.py": 3, "lone.py": 5}


def test_symlinks_out_of_the_tree_are_not_followed(tmp_path):  # defect 6
    (tmp_path / "out" / "d").mkdir(parents=True)
    (tmp_path / "out" / "o.py").write_text(CUDA)
    (tmp_path / "out" / "d" / "o.py").write_text(CUDA)
    t = tmp_path / "t"
    t.mkdir()
    (t / "a.py").write_text(CUDA)
    os.symlink(tmp_path / "out" / "o.py", t / "link.py")
    os.symlink(tmp_path / "out" / "d", t / "linkdir")
    os.symlink(t / "a.py", t / "alias.py")  # in the tree: an alias, scanned once
    assert sorted(f.path for f in _scan(t).findings) == ["a.py"]
    followed = sorted(f.path for f in _scan(t, follow_symlinks=True).findings)
    assert followed == ["a.py", "link.py", "linkdir/o.py"]


@pytest.mark.parametrize(
    "line",
    [
        'unsafe-fixes = "false"',
        'respect-gitignore = "false"',
        'fail-on = ["auto"]',
        'fail-on = "x"',
        "select = 3",
        "respect-gitignore = 0",
        "colour = true",
    ],
)
def test_config_keys_are_typed(tmp_path, line):  # defect 5
    from migrate.core.errors import UsageError
    from migrate.scan.config import load_config

    (tmp_path / "pyproject.toml").write_text(f"[tool.migrate]\n{line}\n")
    with pytest.raises(UsageError, match=line.split(" =")[0]):
        load_config(tmp_path)


def test_bad_config_stops_scan_and_apply_with_one_line(tmp_path):  # defect 5
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\nunsafe-fixes = "false"\n')
    for cmd in ("scan", "apply"):
        r = migrate(cmd, tmp_path, "--no-cache")
        assert r.returncode == 2 and "unsafe-fixes" in r.stderr and r.stderr.count("\n") == 1
    assert "torch.cuda" in (tmp_path / "a.py").read_text()


def test_tool_that_is_not_a_table(tmp_path):  # defect 5
    (tmp_path / "pyproject.toml").write_text('tool = "x"\n')
    r = migrate("scan", tmp_path, "--no-cache")
    assert r.returncode == 2 and "tool" in r.stderr


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xef\xbb\xbf",
        b"\xff\xfe",
        b"\n" * 1000,
        b"x = " + b"(" * 300 + b")" * 300 + b"\n",
        b"import torch\n" + b"if x:\n" * 50 + b"  torch.cuda.x()\n",
        b"\r\n\r",
        "# coding: utf-8\nimport torch\n\u2028\n".encode(),
    ],
)
def test_odd_files_never_crash(tmp_path, data):
    (tmp_path / "odd.py").write_bytes(data)
    (tmp_path / "Dockerfile").write_bytes(data)
    result = _scan(tmp_path)
    assert all(not e.message.startswith("internal error") for e in result.errors)


def test_hash_pinned_requirement_gets_no_stale_fix(tmp_path):  # defect 13
    (tmp_path / "requirements.txt").write_text(
        "torch==2.1.0+cu118 \\\n    --hash=sha256:00ff\nnumpy==1.26.0+cu118\n"
    )
    found = _scan(tmp_path).findings
    torch = [f for f in found if f.line == 1]
    assert torch and all(f.fix is None for f in torch)


def test_read_only_tree_scans(tmp_path):
    (tmp_path / "a.py").write_text(CUDA)
    os.chmod(tmp_path / "a.py", stat.S_IRUSR)
    assert len(_scan(tmp_path).findings) == 1


def test_warm_cache_is_used_and_keeps_every_finding(tmp_path, monkeypatch):
    from migrate.scan import worker

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.py").write_text(CUDA + "y = torch.zeros(1).to('cuda:0')\n")
    (tmp_path / "t" / "Dockerfile").write_text("FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n")
    cache = tmp_path / "cache"
    cold = _scan(tmp_path / "t", cache_dir=cache)
    reads = []
    real = worker.read_bytes
    monkeypatch.setattr(worker, "read_bytes", lambda *a: reads.append(a) or real(*a))
    warm = _scan(tmp_path / "t", cache_dir=cache)
    assert reads == []  # size + mtime + a stored hash: nothing re-read
    assert warm.findings == cold.findings and warm.files == cold.files
    hashed = _scan(tmp_path / "t", cache_dir=cache, trust_mtime=False)
    assert len(reads) == 2 and hashed.findings == cold.findings
