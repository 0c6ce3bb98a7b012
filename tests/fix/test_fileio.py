"""Byte preservation: encodings, BOM, CRLF, final newline, mode bits, atomic writes."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from migrate.core import fileio
from migrate.fix.rewrite import Options, rewrite_file

from .conftest import make_finding, token_scan


def run(path, scan=token_scan, **kw):
    return rewrite_file(path, path.name, "python", [], scan, Options(**kw))


def test_crlf_stays_crlf(tmp_path):
    p = tmp_path / "a.py"
    p.write_bytes(b"import torch\r\n\r\nx = torch.cuda.is_available()\r\n")
    out = run(p)
    assert out.error is None and out.written
    assert p.read_bytes() == (b"import torch\r\nimport math\r\n\r\nx = torch.npu.is_available()\r\n")


def test_bom_is_kept(tmp_path):
    p = tmp_path / "a.py"
    p.write_bytes(b"\xef\xbb\xbfimport torch\ny = torch.cuda.device_count()  # \xc3\xa9\n")
    run(p)
    data = p.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfimport torch\nimport math\n")
    assert data.endswith("y = torch.npu.device_count()  # é\n".encode())


def test_latin1_pep263_roundtrip(tmp_path):
    p = tmp_path / "a.py"
    src = "# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\nx = torch.cuda.is_available()\n"
    p.write_bytes(src.encode("latin-1"))
    out = run(p)
    assert out.error is None
    assert p.read_bytes() == src.replace("cuda", "npu").replace(
        "import torch\n", "import torch\nimport math\n"
    ).encode("latin-1")


def test_missing_final_newline_is_kept(tmp_path):
    p = tmp_path / "a.py"
    p.write_bytes(b"import torch\nx = torch.cuda.is_available()")
    run(p)
    assert p.read_bytes() == b"import torch\nimport math\nx = torch.npu.is_available()"


def test_import_after_last_line_without_newline(tmp_path):
    p = tmp_path / "a.py"
    p.write_bytes(b"x = 1\nimport torch")
    f = make_finding("x = 1\nimport torch", 0, 1, "y", imports=["import math"])
    rewrite_file(p, "a.py", "python", [], lambda *a: [f] if b"x = 1" in p.read_bytes() else [], Options())
    assert p.read_bytes() == b"y = 1\nimport torch\nimport math"


def test_mode_bits_kept(tmp_path):
    p = tmp_path / "run.py"
    p.write_bytes(b"#!/usr/bin/env python\nimport torch\ntorch.cuda.synchronize()\n")
    os.chmod(p, 0o751)
    run(p)
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert p.read_bytes().startswith(b"#!/usr/bin/env python\nimport torch\nimport math\n")


def test_untouched_file_is_byte_identical_and_not_rewritten(tmp_path):
    p = tmp_path / "a.py"
    raw = b"import os\r\nprint('cuda')  \n\n\n"
    p.write_bytes(raw)
    os.utime(p, (1_000_000, 1_000_000))
    out = run(p)
    assert not out.written and not out.changed
    assert p.read_bytes() == raw and p.stat().st_mtime == 1_000_000


def test_unparsable_result_is_refused(tmp_path):
    p = tmp_path / "a.py"
    raw = b"import torch\nx = torch.cuda.is_available()\n"
    p.write_bytes(raw)
    bad = make_finding(raw.decode(), 13, 14, "x = (")  # leaves an open bracket

    out = rewrite_file(p, "a.py", "python", [], lambda *a: [bad], Options())
    assert out.error.startswith("not written") and "SyntaxError" in out.error
    assert p.read_bytes() == raw


def test_unencodable_result_is_refused(tmp_path):
    p = tmp_path / "a.py"
    raw = "# -*- coding: latin-1 -*-\nx = 1\n".encode("latin-1")
    p.write_bytes(raw)
    text = raw.decode("latin-1")
    f = make_finding(text, text.index("1"), text.index("1") + 1, "'\u4e2d'")
    out = rewrite_file(p, "a.py", "python", [], lambda *a: [f] if "1" in a[0] else [], Options())
    assert out.error and "encoded" in out.error
    assert p.read_bytes() == raw


def test_interrupted_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "a.py"
    raw = b"import torch\ntorch.cuda.synchronize()\n"
    p.write_bytes(raw)

    def boom(src, dst, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(fileio.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        run(p)
    assert p.read_bytes() == raw
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.py"]


def test_symlink_is_kept(tmp_path):
    real = tmp_path / "real.py"
    real.write_bytes(b"import torch\ntorch.cuda.synchronize()\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    run(link)
    assert link.is_symlink()
    assert b"torch.npu.synchronize()" in real.read_bytes()


def test_bad_coding_cookie_is_an_error_not_a_crash(tmp_path):
    p = tmp_path / "a.py"
    p.write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    out = run(p)
    assert out.error and not out.written


def _setuid_file(tmp_path, name, uid, gid):
    p = tmp_path / name
    p.write_bytes(b"import torch\ntorch.cuda.synchronize()\n")
    os.chown(p, uid, gid)
    os.chmod(p, 0o6775)
    return p


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another user")
def test_setuid_setgid_of_another_users_file_are_kept(tmp_path):
    p = _setuid_file(tmp_path, "tool.py", 4321, 4322)
    out = run(p)
    st = p.stat()
    assert out.written and not out.warnings
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o6775)
    assert b"import math" in p.read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two other users")
def test_bits_that_cannot_be_kept_are_dropped_and_said():
    """Run as a user who may write the file (its group) but not give it back to its owner:
    the setuid bit is not set on a file that now belongs to that user, and one line says so."""
    with tempfile.TemporaryDirectory() as folder:  # reachable by the other user
        os.chmod(folder, 0o777)
        _drop_and_say(Path(folder))


def _drop_and_say(tmp_path):
    p = _setuid_file(tmp_path, "tool.py", 4321, 4322)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: uid 4323, member of the file's group
        code = 1
        try:
            os.setgroups([4322])
            os.setresgid(4322, 4322, 4322)
            os.setresuid(4323, 4323, 4323)
            out = run(p)
            os.write(write, ("\n".join(out.warnings) + f"|{out.written}").encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as fh:
        warnings, written = fh.read().decode().rsplit("|", 1)
    assert os.waitstatus_to_exitcode(status) == 0 and written == "True"
    st = p.stat()
    assert (st.st_uid, st.st_gid) == (4323, 4322)
    assert stat.S_IMODE(st.st_mode) == 0o2775  # setgid kept (same group), setuid dropped
    assert "\n" not in warnings and "owner (uid 4321, now 4323)" in warnings
    assert "mode 6775 (now 2775, setuid dropped)" in warnings
