"""Where a call came from: the user's line, not a line inside an installed library the user
called (torchvision/ops/boxes.py), which is kept as the library line inside that call."""

from __future__ import annotations

import sys

from migrate.core import callsite


def _library(tmp_path, body: str):
    """A function defined in a file of an installed package (under site-packages)."""
    path = tmp_path / "site-packages" / "fakelib" / "ops.py"
    path.parent.mkdir(parents=True)
    path.write_text(body)
    scope: dict = {"callsite": callsite}
    exec(compile(body, str(path), "exec"), scope)  # noqa: S102 - the test's own code
    return scope["op"], path


def test_a_library_frame_gives_way_to_the_users_call(tmp_path):
    op, path = _library(tmp_path, "def op():\n    return callsite.frames(0)\n")
    user, library = op()
    line = sys._getframe().f_lineno - 1
    assert user == (__file__, line)
    assert library == (str(path), 2)
    assert callsite.is_installed_file(str(path)) and not callsite.is_installed_file(__file__)


def test_with_no_user_frame_the_library_line_is_the_location(tmp_path):
    import threading

    op, path = _library(tmp_path, "def op(out):\n    out.append(callsite.frames(0))\n")
    out: list = []
    worker = threading.Thread(target=op, args=(out,))  # the thread's stack: the library only
    worker.start()
    worker.join()
    assert out == [((str(path), 2), None)]
