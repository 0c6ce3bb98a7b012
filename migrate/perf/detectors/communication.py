"""Findings on one rank's communication: time no computation overlaps (PERF301), small
collectives (PERF302), unaligned SDMA transfers (PERF303), SyncBatchNorm (PERF306).

On Ascend the collectives of ``tables["communication"]`` (communication.json, the HCCL tasks
of trace_view.json or the .db: read/ascend_hccl.py) are judged as msprof-analyze 26.2's
advisor judges them: PERF302 as its PacketChecker (a collective is small when it moved less
than 16 MB over SDMA, or 1 MB over RDMA, in the writer's MB of 10**6 bytes; found when the
small ones are more than 20% of the collectives that used the transport; rules/en/packet.yaml),
PERF303 as its ByteAlignmentChecker (an SDMA transfer of more than 512 bytes over a link other
than ON_CHIP whose size is not a multiple of 512 bytes; found when a collective has one;
rules/en/byte_alignment.yaml). Two differences, both on purpose: the writer's "Total Op Info"
sums, which the PacketChecker counts as collectives of their own, are not collectives here;
and a rank without such a table (Kineto's NCCL kernels) is judged on the collectives' own
sizes (count x dtype) against ``small_bytes``.
"""

from __future__ import annotations

from typing import Any

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import host_locations, pct, us
from migrate.perf.model import Finding
from migrate.perf.read.ascend_hccl import MB
from migrate.perf.timeline import COMM_CORES, HostOp

SDMA_FAMILY = ("HCCS", "PCIE", "SIO", "SDMA")  # the links an SDMA transfer goes over
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


def _ops(a: Analysis) -> list[dict[str, Any]]:
    """The collectives of ``tables["communication"]`` (read/ascend_hccl.py)."""
    got = (a.tl.tables.get("communication") or {}).get("ops", [])
    return got if isinstance(got, list) else []


def _small_packets(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """msprof-analyze's PacketChecker: per transport, the collectives that moved any bytes
    over it and those that moved less than its limit; judged when the small ones' share of
    the count exceeds ``min_ratio``."""
    out = []
    for transport, key in (("SDMA", "sdma_mb"), ("RDMA", "rdma_mb")):
        limit_bytes = limit("PERF302", key) * MB
        moved = [op["links"][transport] for op in ops if op["links"].get(transport, {}).get("bytes", 0) > 0]
        small = [link for link in moved if link["bytes"] < limit_bytes]
        if moved and len(small) / len(moved) > limit("PERF302", "min_ratio"):
            out.append(
                {
                    "transport": transport,
                    "small": len(small),
                    "total": len(moved),
                    "ratio": round(len(small) / len(moved), 6),
                    "limit_mb": limit("PERF302", key),
                    "small_transit_ms": round(sum(link["ms"] for link in small), 6),
                }
            )
    return out


@detector("PERF302")
def small_transfers(a: Analysis) -> list[Finding]:
    ops = [op for op in _ops(a) if op.get("links")]
    if ops:
        return _packet_finding(a, _small_packets(ops))
    small_bytes = limit("PERF302", "small_bytes")
    sizes = _sizes(a)
    small, total = sum(1 for b in sizes if b < small_bytes), len(sizes)
    if not total or small / total < limit("PERF302", "min_share"):
        return []
    steps = max(1, len(a.ctx.windows))
    return [
        make(
            "PERF302",
            f"{small} of {total} collectives moved less than {small_bytes / 1048576:g} MiB "
            f"({small / steps:.3g} per step)",
            {"small": small, "total": total, "small_bytes": small_bytes},
            None,
            rank=a.rank,
            share=None,
        )
    ]


def _packet_finding(a: Analysis, issues: list[dict[str, Any]]) -> list[Finding]:
    if not issues:
        return []
    parts = [
        f"{i['small']} of {i['total']} collectives moved less than {i['limit_mb']:g} MB over "
        f"{i['transport']} ({pct(i['ratio'])}, {i['small_transit_ms']:.3g} ms of transfers)"
        for i in issues
    ]
    return [make("PERF302", "; ".join(parts), {"transports": issues}, None, rank=a.rank, share=None)]


def _unaligned(op: dict[str, Any]) -> tuple[int, int, float, float]:
    """(transfers judged, unaligned ones, their ms, all ms) of one collective's SDMA
    transfers: ByteAlignmentChecker judges those of more than ``min_bytes``."""
    align, floor = limit("PERF303", "alignment"), limit("PERF303", "min_bytes")
    judged = bad = 0
    ms = bad_ms = 0.0
    for link in SDMA_FAMILY:
        for size, count, total_ms in op.get("sizes", {}).get(link, ()):
            if size <= floor:
                continue
            judged += count
            ms += total_ms
            if size % align:
                bad += count
                bad_ms += total_ms
    return judged, bad, bad_ms, ms


@detector("PERF303")
def unaligned_transfers(a: Analysis) -> list[Finding]:
    align = limit("PERF303", "alignment")
    rows = [(op, *_unaligned(op)) for op in _ops(a)]
    flagged = [r for r in rows if r[2]]
    if len(flagged) < limit("PERF303", "min_ops"):
        return []
    transfers = sum(r[1] for r in rows)
    unaligned = sum(r[2] for r in flagged)
    all_ms, bad_ms = sum(r[4] for r in rows), sum(r[3] for r in flagged)
    share = bad_ms / all_ms if all_ms > 0 else 0.0
    return [
        make(
            "PERF303",
            f"{len(flagged)} of {len(rows)} collectives moved SDMA transfers that are not a multiple of "
            f"{align:g} bytes ({unaligned} of {transfers} transfers, {pct(share)} of their transfer time)",
            {
                "ops": len(rows),
                "unaligned_ops": len(flagged),
                "unaligned": unaligned,
                "total": transfers,
                "alignment": align,
                "unaligned_time_share": round(share, 6),
                "examples": [r[0]["name"] for r in flagged[:5]],
            },
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
