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


_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


@cache
def is_installed_file(filename: str) -> bool:
    """A file of an installed package (torchvision, transformers): a library the user's
    code calls, not the user's code."""
    return any(mark in os.path.realpath(filename) for mark in _INSTALLED)


def frames(skip: int = 1) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """(user frame, library frame) on the stack, starting ``skip`` frames above the caller of
    this function (as ``sys._getframe(skip)`` there). The user frame is the innermost one
    outside torch, torchgen, this tool, the standard library and installed packages (the
    user's call into ``torchvision.ops.nms``), the library frame the innermost installed
    package frame inside it (``torchvision/ops/boxes.py:54``), or None. With no frame
    outside installed packages (a model run from its package), the library frame is the
    user frame."""
    frame: types.FrameType | None = sys._getframe(skip + 1)
    library = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename):
            if not is_installed_file(filename):
                return (filename, frame.f_lineno), library
            if library is None:
                library = (filename, frame.f_lineno)
        frame = frame.f_back
    return library, None


def user_frame(skip: int = 1) -> tuple[str, int] | None:
    """(file, line) of the user frame (:func:`frames`), or None."""
    return frames(skip + 1)[0]


def _text(found: tuple[str, int] | None) -> str | None:
    return None if found is None else f"{shown(found[0])}:{found[1]}"


def user_location(skip: int = 1) -> str | None:
    """``file:line`` of the user frame (:func:`frames`; relative when under the working
    directory), starting ``skip`` frames above the caller's frame, or None."""
    return _text(frames(skip + 1)[0])


def locations(skip: int = 1) -> tuple[str | None, str | None]:
    """(``file:line`` of the user frame, of the library frame inside it) (:func:`frames`)."""
    user, library = frames(skip + 1)
    return _text(user), _text(library)


def code_location(skip: int = 1) -> str | None:
    """``file:line`` of the innermost frame outside torch, torchgen, this tool and the
    standard library, an installed package's included: the line of the model's own code
    (transformers' ``sdpa_attention.py``), which precision names as where an error came
    from; the ops report and the emulator name the user's call instead (:func:`frames`)."""
    frame: types.FrameType | None = sys._getframe(skip + 1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return _text((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return None
