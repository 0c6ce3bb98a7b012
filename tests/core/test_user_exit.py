"""User code that ends the process (``os._exit``) in a command that runs it in-process is
exit 2 with one line, never a silent exit 0 without a report."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

MODEL = textwrap.dedent(
    """\
    import os
    import torch


    def factory_exits():
        os._exit(0)


    def forward_exits():
        class M(torch.nn.Module):
            def forward(self, x):
                os._exit(0)

        return M(), torch.ones(2)


    def worker_exits():
        pid = os.fork()
        if pid == 0:
            os._exit(7)  # a forked child's own exit: untouched
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
        return torch.nn.Linear(2, 2), torch.ones(1, 2)
    """
)


def _migrate(cwd, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize("fn", ["factory_exits", "forward_exits"])
@pytest.mark.parametrize("command", ["sensitivity", "dump"])
def test_user_code_ending_the_process_is_exit_2_with_one_line(tmp_path, command, fn):
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text(MODEL)
    extra = ["-o", str(tmp_path / "out")] if command == "dump" else []
    r = _migrate(tmp_path, command, "--model", f"m.py:{fn}", *extra)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "os._exit(0)" in lines[0] and f"migrate {command}" in lines[0]
    assert r.stdout == ""


def test_a_forked_child_of_the_user_code_exits_as_it_says(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text(MODEL)
    r = _migrate(tmp_path, "dump", "--model", "m.py:worker_exits", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "manifest.json").is_file()
