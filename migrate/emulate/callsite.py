"""Where in the user's program a call came from: the first frame outside torch, the
emulation and the standard library."""

from __future__ import annotations

import os
import sys
import sysconfig

_SKIP = tuple(os.path.normcase(p) + os.sep for p in {
    os.path.dirname(os.path.dirname(__file__)),       # migrate/
    os.path.dirname(sys.modules["torch"].__file__) if "torch" in sys.modules else "//",
    sysconfig.get_paths()["stdlib"],
})


def _user(filename: str) -> bool:
    name = os.path.normcase(filename)
    return not name.startswith(_SKIP) and not name.startswith("<")


def call_site(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the innermost user frame; ("<unknown>", 0) when there is none."""
    frame = sys._getframe(depth)
    while frame is not None:
        if _user(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def where(depth: int = 2) -> str:
    path, line = call_site(depth + 1)
    try:
        rel = os.path.relpath(path)
        path = path if rel.startswith("..") else rel
    except ValueError:
        pass
    return f"{path}:{line}"


class NotEmulated(NotImplementedError):
    """A torch_npu name that exists in the wheel but has no emulation."""


def not_emulated(name: str, depth: int = 2) -> NotEmulated:
    return NotEmulated(f"not emulated: {name} (called at {where(depth + 1)}); migrate run "
                       "--emulate npu implements the commonly used torch_npu API only "
                       "(docs/emulate.md)")
