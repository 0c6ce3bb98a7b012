"""Can two dumps be compared at all? Metadata checks that turn into exit 2 (IncompatibleDumps)
instead of a pile of violations: world size, include/exclude filters, kinds recorded, the
model's module names, and the share of records that align with the same shape."""

from __future__ import annotations

from typing import Any

from migrate.core.errors import UsageError


class IncompatibleDumps(UsageError):
    """The two dumps cannot be compared (exit 2)."""


def check_meta(ref: Any, tgt: Any, mapped: bool) -> None:
    rm, tm = ref.meta, tgt.meta
    where = f"{ref.path} vs {tgt.path}"
    if rm.get("world_size", 1) != tm.get("world_size", 1):
        raise IncompatibleDumps(f"{where}: world size {rm.get('world_size')} vs {tm.get('world_size')}")
    for key in ("include", "exclude"):
        if sorted(rm.get(key) or []) != sorted(tm.get(key) or []) and not mapped:
            raise IncompatibleDumps(
                f"{where}: dumped with different --{key} filters ({rm.get(key) or []} vs {tm.get(key) or []})"
            )
    for d in (ref, tgt):
        if d.meta.get("incomplete"):
            raise IncompatibleDumps(
                f"{d.path}: the dump is incomplete (the run raised an error or was stopped while dumping)"
            )


def check_alignment(pairs: list, ref_dir: Any, tgt_dir: Any) -> None:
    """Fewer than half of the reference records found, or most of the found ones with
    another shape: these are dumps of different models."""
    found = [(r, o) for r, o in pairs if o is not None]
    if not found:
        raise IncompatibleDumps(
            f"{ref_dir} and {tgt_dir} share no record (different models? pass --mapping for renamed modules)"
        )
    if len(found) < 0.5 * len(pairs):
        raise IncompatibleDumps(
            f"{ref_dir} and {tgt_dir}: only {len(found)} of {len(pairs)} "
            "reference records have a counterpart (different models? "
            "pass --mapping for renamed modules)"
        )
    shaped = sum(1 for r, o in found if list(r["shape"]) != list(o["shape"]))
    if shaped > 0.5 * len(found):
        raise IncompatibleDumps(
            f"{ref_dir} and {tgt_dir}: {shaped} of {len(found)} aligned "
            "tensors have different shapes (different model configs?)"
        )
