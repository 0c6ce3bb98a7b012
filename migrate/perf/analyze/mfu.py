"""MFU of one side of a run: model FLOPs per step (``--model`` counted, or ``--flops``)
over the measured step time, against the chip's peak for the compute dtype
(data/chips.yaml).

``flops_per_step`` is one rank's (the factory builds one rank's batch); each rank's MFU is
``flops / step_s / peak`` and the side's is their mean. The chip comes from the profile's
device name, else ``--chip``. When a figure is missing (no step time, a chip or dtype the
table has no peak for) ``mfu`` is None and ``reason`` says why: never a guessed peak.
"""

from __future__ import annotations

from typing import Any

from migrate.core.errors import UsageError
from migrate.perf.analyze.chips import DTYPES, chips, dtype_name, find_chip
from migrate.perf.model import RankResult

__all__ = ["DEFAULT_DTYPE", "check_chip", "check_dtype", "mfu_for"]

DEFAULT_DTYPE = "bf16"
TABLE = "migrate/perf/data/chips.yaml"
UPPER_BOUND_SOURCES = ("kernel list",)  # step times that may miss tasks: MFU is an upper bound


def check_dtype(value: str | None) -> str | None:
    """``--dtype``'s table name, or a UsageError listing the known ones."""
    if value is None:
        return None
    name = dtype_name(value)
    if name is None:
        raise UsageError(f"--dtype {value!r}: not a compute dtype (use one of {', '.join(DTYPES)})")
    return name


def check_chip(value: str | None, option: str = "--chip") -> None:
    """A UsageError when ``--chip`` names no row of the chip table."""
    if value is not None and find_chip(value) is None:
        known = ", ".join(c.id for c in chips())
        raise UsageError(f"{option} {value!r}: not in the chip table {TABLE} (known: {known})")


def _device_name(ranks: list[RankResult], given: str | None) -> tuple[str | None, str]:
    names = sorted({r.profile.chip for r in ranks if r.profile.chip})
    known = [n for n in names if find_chip(n) is not None]
    if known:
        return known[0], "profile"
    if given:
        return given, "--chip" if not names else f"--chip (the profile's {names[0]!r} is not in the table)"
    return (names[0] if names else None), "profile"


def _rank_rows(ranks: list[RankResult], flops: float, peak: float) -> list[dict[str, Any]]:
    rows = []
    for r in ranks:
        step_us = r.mean_step_us
        if step_us > 0:
            mfu = flops / (step_us * 1e-6) / peak
            rows.append({"rank": r.rank, "step_us": round(step_us, 3), "mfu": mfu})
    return rows


def mfu_for(
    ranks: list[RankResult],
    flops: dict[str, Any],
    chip: str | None = None,
    dtype: str | None = None,
    option: str = "--chip",
    mixed: str | None = None,
) -> dict[str, Any]:
    """The ``mfu`` record of docs/contracts.md §10 for one side's ranks.

    ``flops``: ``{"total": F, "source": "--flops"|"--model MOD:FN", ...}``."""
    name, chip_source = _device_name(ranks, chip)
    row = find_chip(name)
    dtype_used = dtype or DEFAULT_DTYPE
    steps = [r.mean_step_us for r in ranks if r.mean_step_us > 0]
    out: dict[str, Any] = {
        "mfu": None,
        "reason": None,
        "flops_per_step": flops["total"],
        "flops_source": flops["source"],
        "step_us": round(sum(steps) / len(steps), 3) if steps else None,
        "device_name": name,
        "chip": row.id if row else name,
        "chip_source": chip_source,
        "dtype": dtype_used,
        "dtype_source": "--dtype" if dtype else "default",
        "peak_flops": None,
        "peak_source": row.source if row else None,
        "ranks": [],
    }
    peak = row.peak_flops(dtype_used) if row else None
    if mixed:
        out["reason"] = "the profiles are not one run: no one step time to judge"
    elif not steps:
        out["reason"] = "the profile has no step time"
    elif row is None:
        missing = f"the chip {name!r} is not in {TABLE}"
        out["reason"] = missing if name else f"the profile names no chip: pass {option}"
    elif peak is None:
        listed = ", ".join(sorted(row.peak_tflops))
        out["reason"] = f"{row.id} has no published {dtype_used} peak (the table lists {listed}): use --dtype"
    if out["reason"]:
        return out
    assert peak is not None
    rows = _rank_rows(ranks, flops["total"], peak)
    out.update(peak_flops=peak, ranks=rows, mfu=sum(r["mfu"] for r in rows) / len(rows))
    sources = {s.source for r in ranks for s in r.steps}
    if out["mfu"] > 1:
        out["note"] = (
            "above 100% of the peak, which no run reaches: the FLOPs per step (one rank's), "
            "the chip or the dtype is wrong"
        )
    elif sources & set(UPPER_BOUND_SOURCES):
        out["note"] = "the step time is a kernel list's, which may not hold every task: MFU is an upper bound"
    return out
