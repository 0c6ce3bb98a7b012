"""Where in the user's program a call came from: the innermost frame outside torch,
torchgen, this tool and the standard library (``migrate ops --torch`` names the line that
dispatched an op, ``migrate run --emulate`` the line that called an unemulated name)."""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from functools import cache


@cache
def _skipped_prefixes() -> tuple[str, ...]:
    import migrate

    dirs = {os.path.dirname(migrate.__file__), sysconfig.get_paths()["stdlib"]}
    for name in ("torch", "torchgen"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                continue
        if module.__file__:
            dirs.add(os.path.dirname(module.__file__))
    return tuple(os.path.realpath(d) + os.sep for d in dirs)


@cache
def is_user_file(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    return not os.path.realpath(filename).startswith(_skipped_prefixes())


@cache
def shown(filename: str) -> str:
    """``filename`` relative to the working directory when it lies under it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def user_frame(skip: int = 1) -> tuple[str, int] | None:
    """(file, line) of the innermost user frame on the stack, starting ``skip`` frames
    above the caller of this function (as ``sys._getframe(skip)`` there), or None."""
    frame: types.FrameType | None = sys._getframe(skip + 1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def user_location(skip: int = 1) -> str | None:
    """``file:line`` of the innermost user frame, starting ``skip`` frames above the caller's
    frame (relative when under the working directory), or None."""
    found = user_frame(skip)
    return None if found is None else f"{shown(found[0])}:{found[1]}"
