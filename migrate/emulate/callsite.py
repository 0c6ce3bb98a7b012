"""Call sites for the emulation's messages (migrate.core.callsite finds the user frame)."""

from __future__ import annotations

from migrate.core.callsite import shown, user_frame


def call_site(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the innermost user frame; ("<unknown>", 0) when there is none."""
    return user_frame(depth) or ("<unknown>", 0)


def where(depth: int = 2) -> str:
    path, line = call_site(depth + 1)
    return f"{shown(path)}:{line}"


class NotEmulated(NotImplementedError):
    """A torch_npu name that exists in the wheel but has no emulation."""


def not_emulated(name: str, depth: int = 2) -> NotEmulated:
    return NotEmulated(
        f"not emulated: {name} (called at {where(depth + 1)}); migrate run "
        "--emulate npu implements the commonly used torch_npu API only "
        "(docs/emulate.md)"
    )
