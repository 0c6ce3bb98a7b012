"""Port targets: what a rewrite aims at (docs/contracts.md §2).

* ``portable`` (default) — the result runs wherever the original ran (CUDA, CPU, ...) and on
  Ascend: torch's device-generic API (torch.accelerator, torch.amp with a device type,
  torch.distributed.get_default_backend_for_device), device names gain "npu", and where no
  generic form exists an NPU arm beside the CUDA one.
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


# The device-generic spellings portable rewrites are built from (torch >= 2.6; checked against
# the installed torch by tests/meta/test_portable_names_exist.py). Rule rows name them as
# {placeholders} in their `portable:` forms.
DEVICE_FORMS = {
    # the current accelerator's device type, or "cpu" where there is none
    "device_type": 'getattr(torch.accelerator.current_accelerator(True), "type", "cpu")',
    # the same under a test that an accelerator is there (`... if is_available() else "cpu"`)
    "guarded_device_type": "torch.accelerator.current_accelerator().type",
    # autocast / GradScaler: off the accelerator they keep the original "cuda" (and so stay
    # disabled on CPU, as the original was), instead of turning CPU autocast on
    "amp_device_type": 'getattr(torch.accelerator.current_accelerator(), "type", "cuda")',
}


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template(value: str, *extra: str) -> str | None:
    """A schema check for a `portable:` template: every {placeholder} is a DEVICE_FORMS name
    (or one of ``extra``, filled by the matcher). None when it is fine, else the problem."""
    unknown = [m for m in _PLACEHOLDER.findall(value) if m not in DEVICE_FORMS and m not in extra]
    if unknown:
        known = ", ".join([*DEVICE_FORMS, *extra])
        return f"unknown placeholder {{{unknown[0]}}} (known: {known})"
    return None


def expand(template: str, **values: str) -> str:
    """A `portable:` template with its {placeholders} filled (DEVICE_FORMS and ``values``)."""
    out = template
    for key, value in {**DEVICE_FORMS, **values}.items():
        out = out.replace("{" + key + "}", value)
    return out
