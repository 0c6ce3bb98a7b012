"""Findings on one rank's communication: time no computation overlaps (PERF301), small
collectives (PERF302), unaligned SDMA transfers (PERF303), SyncBatchNorm (PERF306).

Collective sizes come from the device ops (Kineto's NCCL kernels carry their element count
and dtype; HCCL ops their count or size) or, on Ascend, from communication.json's size
distributions (``tables["communication"]``: transfers per link type and size).
"""

from __future__ import annotations

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import host_locations, pct, us
from migrate.perf.model import Finding
from migrate.perf.timeline import COMM_CORES, HostOp

SYNC_BN_OPS = ("aten::batch_norm_gather_stats_with_counts", "aten::batch_norm_gather_stats", "SyncBatchNorm")


@detector("PERF301")
def exposed_communication(a: Analysis) -> list[Finding]:
    steps = [s for s in a.steps if s.total_us > 0]
    exposed = [s for s in steps if s.exposed_comm_share >= limit("PERF301", "min_share")]
    if not exposed:
        return []
    mean = sum(s.communication_not_overlapped_us for s in exposed) / len(exposed)
    share = sum(s.exposed_comm_share for s in exposed) / len(exposed)
    label = "the step" if len(steps) == 1 else f"{len(exposed)} of {len(steps)} steps"
    return [
        make(
            "PERF301",
            f"communication not overlapped with computation took {pct(share)} of {label} "
            f"({us(mean)} per step)",
            {
                "steps": [
                    {
                        "step": s.step,
                        "not_overlapped_us": s.communication_not_overlapped_us,
                        "total_us": s.total_us,
                    }
                    for s in exposed
                ]
            },
            mean,
            rank=a.rank,
            share=share,
        )
    ]


def _sizes(a: Analysis) -> list[float]:
    cols, strings = a.tl.device_ops.cols, a.tl.strings
    return [
        cols["bytes"][i]
        for i in a.ctx.ops_in_steps()
        if strings[cols["core"][i]] in COMM_CORES and cols["bytes"][i] > 0
    ]


def _distribution(a: Analysis, link: str | None = None) -> list[tuple[float, int]]:
    """(bytes, count) of the transfers communication.json lists (``link`` types only)."""
    out = []
    for op in (a.tl.tables.get("communication") or {}).get("ops", []):
        for kind, sizes in op.get("sizes", {}).items():
            if link is None or kind == link:
                out.extend(sizes)
    return out


@detector("PERF302")
def small_transfers(a: Analysis) -> list[Finding]:
    small_bytes = limit("PERF302", "small_bytes")
    sizes = _sizes(a)
    if sizes:
        small = sum(1 for b in sizes if b < small_bytes)
        total = len(sizes)
    else:
        dist = _distribution(a)
        small = sum(n for b, n in dist if b < small_bytes)
        total = sum(n for _, n in dist)
    if not total or small / total < limit("PERF302", "min_share"):
        return []
    steps = max(1, len(a.ctx.windows))
    source = "collectives" if sizes else "transfers (communication.json)"
    return [
        make(
            "PERF302",
            f"{small} of {total} {source} moved less than {small_bytes / 1048576:g} MiB "
            f"({small / steps:.3g} per step)",
            {"small": small, "total": total, "small_bytes": small_bytes},
            None,
            rank=a.rank,
            share=None,
        )
    ]


@detector("PERF303")
def unaligned_transfers(a: Analysis) -> list[Finding]:
    align = limit("PERF303", "alignment")
    dist = _distribution(a, "SDMA")
    total = sum(n for _, n in dist)
    unaligned = sum(n for b, n in dist if b % align)
    if not total or unaligned / total < limit("PERF303", "min_share"):
        return []
    return [
        make(
            "PERF303",
            f"{unaligned} of {total} SDMA transfers are not a multiple of {align:g} bytes",
            {"unaligned": unaligned, "total": total, "alignment": align},
            None,
            rank=a.rank,
        )
    ]


@detector("PERF306")
def sync_batchnorm(a: Analysis) -> list[Finding]:
    calls: list[HostOp] = []
    for w in a.ctx.windows:
        calls.extend(a.ctx.host_ops_in(w, match=lambda name: name.startswith(SYNC_BN_OPS)))
    steps = max(1, len(a.ctx.windows))
    if not calls or len(calls) / steps < limit("PERF306", "min_per_step"):
        return []
    spent = sum(op.dur for op in calls) / steps
    return [
        make(
            "PERF306",
            f"{len(calls) / steps:.3g} SyncBatchNorm statistics gather(s) per step, "
            f"{us(spent)} per step on the host",
            {"per_step": round(len(calls) / steps, 3), "host_us_per_step": round(spent, 3)},
            spent,
            locations=host_locations(a, calls),
            rank=a.rank,
        )
    ]
