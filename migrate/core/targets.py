"""Port targets: what a rewrite aims at (docs/contracts.md §2).

* ``portable`` (default) — the result runs wherever the original ran (CUDA, CPU, ...) and on
  Ascend: every device decision goes through one named helper (the project's own, or the
  one the port adds: migrate/core/device_helpers), device names gain "npu", and where torch.npu
  spells an API differently an NPU arm beside the CUDA one.
* ``npu`` — NPU-only replacement, for an application that leaves CUDA behind.
* ``transfer`` — torch_npu's runtime patching (``transfer_to_npu``) at each entry point, and
  rewrites only for what patching cannot reach.

A project picks one with ``--target`` or ``target = "..."`` in ``[tool.migrate]``; the
``per-path-target`` table (glob -> target) overrides it for some files.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

TARGETS = ("portable", "npu", "transfer")
DEFAULT_TARGET = "portable"


def check_target(value: str, where: str) -> str:
    from migrate.core.errors import UsageError

    if value not in TARGETS:
        raise UsageError(f"{where} {value!r}: choose one of {', '.join(TARGETS)}")
    return value


@dataclass(frozen=True)
class TargetChoice:
    """The default target and the per-path overrides (first matching glob wins)."""

    default: str = DEFAULT_TARGET
    per_path: tuple[tuple[str, str], ...] = ()

    def for_path(self, rel: str) -> str:
        for glob, target in self.per_path:
            if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(rel, glob.rstrip("/") + "/*"):
                return target
        return self.default

    def key(self) -> str:
        """Part of the scan cache key: findings differ per target."""
        return "target=" + self.default + "".join(f";{g}={t}" for g, t in self.per_path)

    def describe(self) -> str:
        if not self.per_path:
            return self.default
        return self.default + " (" + ", ".join(f"{g}: {t}" for g, t in self.per_path) + ")"


# The placeholders portable rewrites are written with in rule rows' `portable:` forms, and the
# question each asks the device helper (migrate/core/device_helpers: type, module, amp, backend;
# "device" is a device where one is in scope, else the type). migrate/scan/python/device_names
# fills them.
DEVICE_PLACEHOLDERS = {
    "device_type": "type",
    "device_module": "module",
    "amp_device_type": "amp",
    "dist_backend": "backend",
    "device": "device",
}


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template(value: str, *extra: str) -> str | None:
    """A schema check for a `portable:` template: every {placeholder} is a DEVICE_PLACEHOLDERS
    name (or one of ``extra``, filled by the matcher). None when it is fine, else the problem."""
    unknown = [m for m in _PLACEHOLDER.findall(value) if m not in DEVICE_PLACEHOLDERS and m not in extra]
    if unknown:
        known = ", ".join([*DEVICE_PLACEHOLDERS, *extra])
        return f"unknown placeholder {{{unknown[0]}}} (known: {known})"
    return None
