"""Call sites for the emulation's messages (migrate.core.callsite finds the user frame)."""

from __future__ import annotations

from migrate.core.callsite import frames, shown, user_frame


def call_site(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the innermost user frame; ("<unknown>", 0) when there is none."""
    return user_frame(depth) or ("<unknown>", 0)


def where(depth: int = 2) -> str:
    return where_via(depth + 1)[0]


def where_via(depth: int = 2) -> tuple[str, str | None]:
    """(``file:line`` of the user frame, as :func:`where`; ``file:line`` of the installed
    library's frame inside that call, or None): migrate.core.callsite.frames, as ``migrate
    ops --torch`` places its rows and their ``via``."""
    user, library = frames(depth)
    path, line = user or ("<unknown>", 0)
    return f"{shown(path)}:{line}", None if library is None else f"{shown(library[0])}:{library[1]}"


class NotEmulated(NotImplementedError):
    """A torch_npu name that exists in the wheel but has no emulation."""


def not_emulated(name: str, depth: int = 2) -> NotEmulated:
    return NotEmulated(
        f"not emulated: {name} (called at {where(depth + 1)}); migrate run "
        "--emulate npu implements the commonly used torch_npu API only "
        "(docs/emulate.md)"
    )
