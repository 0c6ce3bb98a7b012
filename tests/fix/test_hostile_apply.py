"""Apply under hostile and unlucky input (issue 13): never write wrong code, never touch a
file outside the tree, keep what the OS lets us keep."""

from __future__ import annotations

import os
import stat
from functools import partial

import pytest
from hostile import CUDA, migrate

from migrate.core import fileio
from migrate.core.rules import default_rules
from migrate.core.targets import TargetChoice
from migrate.fix.rewrite import Options, fix_text, rewrite_file
from migrate.fix.run import apply_scan, engine_scan
from migrate.scan.engine import ScanOptions, scan_paths

RULES = default_rules()
NPU = TargetChoice("npu")  # these tests check the NPU forms


def _apply(*paths, options=None, **kw):
    result = scan_paths(list(paths), ScanOptions(jobs=1, targets=NPU, **kw))
    return apply_scan(
        result, paths[0] if paths[0].is_dir() else paths[0].parent, RULES, options or Options(targets=NPU)
    )


def _clean(tmp_path, text: str) -> str:
    """What a single clean apply makes of ``text``."""
    p = tmp_path / "clean" / "ref.py"
    p.parent.mkdir(exist_ok=True)
    p.write_text(text)
    _apply(p)
    return p.read_text()


def test_stale_findings_are_never_spliced_into_new_bytes(tmp_path):  # defect 1
    from migrate.core.fileio import content_hash

    old = "import torch\nx = torch_accelerator_module.cuda()\n"
    new = "import torch\n\n\ny = torch_accelerator_module\nx = y.cuda()  # moved\n"
    p = tmp_path / "a.py"
    p.write_text(new)
    first = engine_scan(old, "a.py", "python", RULES, "npu")
    out = rewrite_file(
        p,
        "a.py",
        "python",
        RULES,
        partial(engine_scan, target="npu"),
        Options(targets=NPU),
        first=first,
        digest=content_hash(old.encode()),
    )
    assert out.error is None
    assert p.read_text() == _clean(tmp_path, new)


def test_file_edited_between_scan_and_apply(tmp_path):  # defect 1 (concurrency, in process)
    t = tmp_path / "t"
    t.mkdir()
    p = t / "a.py"
    p.write_text("import torch\nx = torch_accelerator_module.cuda()\n")
    result = scan_paths([t], ScanOptions(jobs=1, targets=NPU))
    edited = "import torch\n# a comment that moves every offset\nz = torch.cuda.synchronize()\n"
    p.write_text(edited)
    apply_scan(result, t, RULES, Options(targets=NPU))
    assert p.read_text() == _clean(tmp_path, edited)


def test_file_changed_just_before_the_replace_is_not_written(tmp_path, monkeypatch):  # defect 1
    p = tmp_path / "a.py"
    p.write_text(CUDA)
    real_fsync = os.fsync

    def user_saves(fd):  # the user's editor saves while we write the temp file
        real_fsync(fd)
        p.write_text(CUDA + "# user edit\n")

    monkeypatch.setattr(fileio.os, "fsync", user_saves)
    run = _apply(tmp_path)
    assert "changed while" in run.errors[0].message
    assert p.read_text() == CUDA + "# user edit\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.py"]


def test_same_size_and_mtime_replacement_with_a_warm_cache(tmp_path):  # defect 1
    t = tmp_path / "t"
    t.mkdir()
    p = t / "a.py"
    p.write_text("import torch\nx = torch_accelerator_module.cuda()\n")
    cache = tmp_path / "cache"
    scan_paths([t], ScanOptions(jobs=1, cache_dir=cache, targets=NPU))
    st = p.stat()
    swapped = "import torch\ny = torch_accelerator_moduleZ.cuda() + 1\n"[: st.st_size]
    p.write_text(swapped)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = migrate("apply", t, "--cache-dir", cache)
    assert r.returncode in (0, 1), r.stderr
    assert p.read_text() == _clean(tmp_path, swapped)


def test_named_symlink_never_rewrites_a_rejoined_path(tmp_path):  # defect 1
    (tmp_path / "pkg" / "pkg").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mod.py").write_text(CUDA)
    os.symlink("../out/mod.py", tmp_path / "pkg" / "mod.py")
    (tmp_path / "pkg" / "pkg" / "mod.py").write_text(CUDA)
    r = migrate("apply", "pkg/mod.py", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pkg" / "pkg" / "mod.py").read_text() == CUDA
    assert "torch.npu" in (tmp_path / "out" / "mod.py").read_text()


def test_apply_does_not_leave_the_tree_through_symlinks(tmp_path):  # defect 6
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "o.py").write_text(CUDA)
    t = tmp_path / "t"
    t.mkdir()
    (t / "a.py").write_text(CUDA)
    os.symlink(tmp_path / "out" / "o.py", t / "link.py")
    os.symlink(tmp_path / "out", t / "linkdir")
    os.symlink("a.py", t / "alias.py")
    run = _apply(t)
    assert run.errors == []
    assert (tmp_path / "out" / "o.py").read_text() == CUDA
    assert "torch.npu" in (t / "a.py").read_text() and (t / "alias.py").is_symlink()
    _apply(t, follow_symlinks=True)
    assert "torch.npu" in (tmp_path / "out" / "o.py").read_text()


def test_read_only_files_are_refused_unless_forced(tmp_path):  # defect 7
    p = tmp_path / "a.py"
    p.write_text(CUDA)
    os.chmod(p, 0o444)
    run = _apply(tmp_path)
    assert "read-only" in run.errors[0].message and p.read_text() == CUDA
    r = migrate("apply", tmp_path, "--no-cache")
    assert r.returncode == 1 and "--force" in r.stderr
    assert migrate("apply", tmp_path, "--no-cache", "--force").returncode == 0
    assert "torch.npu" in p.read_text() and stat.S_IMODE(p.stat().st_mode) == 0o444


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_owner_group_and_xattrs_are_kept(tmp_path):  # defect 7
    p = tmp_path / "a.py"
    p.write_text(CUDA)
    os.chown(p, 65534, 65534)
    os.chmod(p, 0o640)
    try:
        os.setxattr(p, "user.origin", b"kept")
        xattrs = True
    except OSError:
        xattrs = False
    run = _apply(tmp_path)
    assert run.errors == [] and "torch.npu" in p.read_text()
    st = p.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)
    if xattrs:
        assert os.getxattr(p, "user.origin") == b"kept"


def test_hard_links_that_are_split_are_reported(tmp_path):  # defect 7
    p = tmp_path / "a.py"
    p.write_text(CUDA)
    os.link(p, tmp_path / "b.txt")
    run = _apply(p)
    assert any("hard link" in w for o in run.outcomes for w in o.warnings)
    r = migrate("apply", tmp_path / "b.txt", "--no-cache")  # nothing to do there: no warning
    assert "hard link" not in r.stderr


def test_one_libcst_parse_per_file(tmp_path, monkeypatch):  # defect 8
    import libcst

    calls = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda src, *a, **k: calls.append(1) or real(src))
    text = "import torch\nx = torch.zeros(1)\n" + "x.cuda();" * 300 + "\n" + "x.cuda()\n" * 300
    new, edits, _, err = fix_text(
        text, "m.py", "python", RULES, partial(engine_scan, target="npu"), unsafe=False
    )
    assert err is None and len(edits) == 600  # no import: torch.npu autoloads
    from migrate.fix.verify import touched_chunks, verify_python

    assert verify_python(new, "m.py", text) is None and len(calls) == 1
    assert len(touched_chunks(text, new)) == 301  # one line of 300, 300 lines (no import)


def test_a_scan_error_is_not_disguised_as_a_syntax_error(tmp_path):
    from migrate.core.errors import FileProblem

    def broken(*a):
        raise FileProblem("syntax error at line 2: something")

    text, edits, _, err = fix_text("x = 1\n", "m.py", "python", RULES, broken, unsafe=False)
    assert err == "syntax error at line 2: something" and edits == []


def test_form_feed_and_line_separator_before_a_multiline_fix(tmp_path):  # defect 12
    for odd in ("\x0c", "x = '\u2028'", "\x0c\x0c"):
        text = f"import torch\n{odd}\nx = torch.cuda.synchronize(\n)\n"
        p = tmp_path / "a.py"
        p.write_text(text)
        run = _apply(tmp_path)
        assert run.errors == [], odd
        assert "torch.npu.synchronize(\n)" in p.read_text()


def test_cr_only_file_is_rewritten_with_cr(tmp_path):  # defect 12
    p = tmp_path / "a.py"
    p.write_bytes(b"import torch\rx = 1\rtorch.cuda.synchronize()\r")
    run = _apply(tmp_path)
    assert run.errors == []
    assert p.read_bytes() == b"import torch\rx = 1\rtorch.npu.synchronize()\r"


def test_248_byte_name_is_rewritten(tmp_path):  # defect 13
    p = tmp_path / ("m" * 245 + ".py")
    p.write_text(CUDA)
    run = _apply(tmp_path)
    assert run.errors == [] and "torch.npu" in p.read_text()


def test_unicode_escape_cookie_is_refused_not_reencoded(tmp_path):  # defect 13
    raw = b'# coding: unicode_escape\nimport torch\nx = "\\u00e9"\ntorch.cuda.synchronize()\n'
    p = tmp_path / "a.py"
    p.write_bytes(raw)
    run = _apply(tmp_path)
    assert "re-encode" in run.errors[0].message and p.read_bytes() == raw


def test_utf16_file_round_trips(tmp_path):  # defect 9
    p = tmp_path / "a.py"
    p.write_bytes(b"\xfe\xff" + CUDA.encode("utf-16-be"))
    assert _apply(tmp_path).errors == []
    assert p.read_bytes() == b"\xfe\xff" + _clean(tmp_path, CUDA).encode("utf-16-be")


def test_hash_pinned_requirement_is_not_rewritten(tmp_path):  # defect 13
    p = tmp_path / "requirements.txt"
    text = "torch==2.1.0+cu118 --hash=sha256:00ff\n"
    p.write_text(text)
    _apply(tmp_path, options=Options(unsafe=True, targets=NPU))
    assert p.read_text() == text


def test_apply_errors_fail_the_run_and_names_are_escaped(tmp_path):  # defects 9, 14
    (tmp_path / "bad\n::error::x.py").write_text("import torch\ntorch.cuda.x(\n")
    r = migrate("apply", tmp_path, "--no-cache")
    assert r.returncode == 1
    assert "bad\\n::error::x.py: error:" in r.stderr
    assert not any(ln.startswith("::error") for ln in r.stderr.splitlines())


def test_import_on_a_line_shared_with_the_code_that_needs_it(tmp_path):
    p = tmp_path / "a.py"
    p.write_text("import torch; torch.cuda.synchronize()\n")
    assert _apply(tmp_path).errors == []
    assert p.read_text() == "import torch; torch.npu.synchronize()\n"


@pytest.mark.parametrize("exc", [MemoryError, RecursionError])
def test_a_file_too_deep_for_a_fixer_is_that_files_error(tmp_path, exc):
    """A parser or a recursive fixer giving up on one file (MemoryError from CPython's parser
    on deep nesting, RecursionError from a walk) is that file's error, never an internal one."""
    from migrate.fix.run import ApplyItem, _guarded

    def work():
        raise exc

    out = _guarded(ApplyItem(tmp_path / "deep.py", "deep.py", "python", None), work)
    assert out.rel == "deep.py" and not out.written
    assert out.error and "nesting too deep" in out.error and "internal error" not in out.error
