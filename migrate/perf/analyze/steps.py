"""The step breakdown of one rank: computing, communication not overlapped, free.

Three sources, the best the profile has:

1. ``step_trace_time.csv`` (Ascend; ``StepTraceTime`` of the .db export's analysis.db): the
   profiler's own figures, taken as they are.
2. The overlap tracks of ``trace_view.json`` (Ascend): each Computing, Communication,
   Communication(Not Overlapped) and Free slice counted in the step whose device window
   holds its start, as torch_npu's TraceStepTimeParser counts them.
3. The device ops themselves (Kineto, or Ascend without tracks; ``kernel list`` when Ascend's
   kernel_details.csv is all there is): in the step's device
   window, computing is the union of compute ops, communication the union of collective
   ops, communication not overlapped the part of it no compute op covers, and free the
   part of the window no op covers. A CPU run's ops stand for device ops (context.py).

In every case ``total_us`` = computing + communication not overlapped + free.
"""

from __future__ import annotations

import bisect

from migrate.perf.analyze.context import RankContext, StepWindow
from migrate.perf.analyze.intervals import covered, length, union
from migrate.perf.model import StepBreakdown
from migrate.perf.timeline import COMM_CORES

__all__ = ["breakdown"]


def _row(rank, step, computing, not_overlapped, free, comm, source) -> StepBreakdown:
    total = computing + not_overlapped + free
    return StepBreakdown(
        rank=rank,
        step=step,
        total_us=round(total, 3),
        computing_us=round(computing, 3),
        communication_not_overlapped_us=round(not_overlapped, 3),
        free_us=round(free, 3),
        communication_us=round(comm, 3),
        source=source,
    )


def _from_step_trace(ctx: RankContext, rank) -> list[StepBreakdown]:
    source = ctx.tl.facts.get("step_trace_source", "step_trace_time.csv")  # or analysis.db's table
    out = []
    for row in ctx.tl.tables["step_trace_time"]:
        out.append(
            _row(
                rank,
                row["step"],
                row["computing"] or 0.0,
                row.get("communication_not_overlapped") or 0.0,
                row["free"] or 0.0,
                row.get("communication") or 0.0,
                source,
            )
        )
    return out


def _from_overlap(ctx: RankContext, rank) -> list[StepBreakdown]:
    cols, strings = ctx.tl.overlap.cols, ctx.tl.strings
    sums: list[dict[str, float]] = [
        dict.fromkeys(("Computing", "Communication", "Communication(Not Overlapped)", "Free"), 0.0)
        for _ in ctx.windows
    ]
    # every slice belongs to the step whose device window holds its start
    spans = [(w.dev_start, w.dev_end, k) for k, w in enumerate(ctx.windows) if w.has_device]
    if len(ctx.windows) == 1 and not spans:
        spans = [(float("-inf"), float("inf"), 0)]
    spans.sort()
    starts = [lo for lo, _, _ in spans]
    for i in range(len(ctx.tl.overlap)):
        start = cols["start"][i]
        j = bisect.bisect_right(starts, start) - 1
        while j > 0 and start < spans[j - 1][1]:  # windows that overlap: the earlier step, as torch_npu
            j -= 1
        if j >= 0 and start < spans[j][1]:
            sums[spans[j][2]][strings[cols["kind"][i]]] += cols["dur"][i]
    return [
        _row(
            rank,
            w.id,
            s["Computing"],
            s["Communication(Not Overlapped)"],
            s["Free"],
            s["Communication"],
            "overlap tracks",
        )
        for w, s in zip(ctx.windows, sums, strict=True)
        if w.has_device or len(ctx.windows) == 1
    ]


def _window_breakdown(ctx: RankContext, w: StepWindow, rank) -> StepBreakdown:
    cols, strings = ctx.tl.device_ops.cols, ctx.tl.strings
    compute: list[tuple[float, float]] = []
    comm: list[tuple[float, float]] = []
    for i in w.ops:
        start = cols["start"][i]
        span = (start, start + cols["dur"][i])
        (comm if strings[cols["core"][i]] in COMM_CORES else compute).append(span)
    busy_compute, busy_comm = union(compute), union(comm)
    computing = length(busy_compute)
    comm_total = length(busy_comm)
    not_overlapped = comm_total - covered(busy_comm, busy_compute)
    window = (w.dev_end - w.dev_start) if w.has_device else 0.0
    if ctx.tl.device == "cpu" and w.host_end > w.host_start and w.host_end != float("inf"):
        window = w.host_end - w.host_start  # a CPU run: the step's own time on the host
    free = max(window - computing - not_overlapped, 0.0)
    # Ascend's kernel list alone: its gaps may be tasks the list does not hold (a sampled or
    # filtered kernel_details.csv), so its free time is not evidence of a host-bound step
    source = "kernel list" if ctx.tl.kind == "ascend" and not len(ctx.tl.host_ops) else "device ops"
    return _row(rank, w.id, computing, not_overlapped, free, comm_total, source)


def breakdown(ctx: RankContext, rank: int | None) -> list[StepBreakdown]:
    """The rank's steps, in order (see the module doc for where each figure comes from)."""
    if ctx.tl.tables.get("step_trace_time"):
        return _from_step_trace(ctx, rank)
    if len(ctx.tl.overlap):
        return _from_overlap(ctx, rank)
    return [_window_breakdown(ctx, w, rank) for w in ctx.windows if w.ops]
