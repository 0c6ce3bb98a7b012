"""Findings on the host holding the device back: free time (PERF201), host syncs
(PERF202), explicit synchronisation (PERF203), the data loader (PERF205).

A host sync is a framework op that reads a device value on the host: ``aten::item`` /
``aten::_local_scalar_dense`` (``.item()``, ``if tensor:``, ``print``), ``aten::tolist``,
a copy to the CPU inside ``aten::to`` / ``aten::_to_copy`` / ``aten::copy_`` whose input is
on the device (recorded as a device-to-host memcpy on CUDA), and ``aten::nonzero`` and
friends whose output size the host must learn. Counted per step, with the source line of
each where the profile recorded stacks; nested calls (``item`` -> ``_local_scalar_dense``)
count once. Explicit synchronisation is ``aclrtSynchronizeDevice`` / ``Stream`` on Ascend
and ``cudaDeviceSynchronize`` / ``cudaStreamSynchronize`` on CUDA, outside any sync op.
"""

from __future__ import annotations

from collections import Counter

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import host_locations, pct, us
from migrate.perf.model import Finding
from migrate.perf.timeline import HostOp

SYNC_OPS = frozenset(
    {
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::tolist",
        "aten::nonzero",
        "aten::masked_select",
        "aten::unique",
        "aten::_unique2",
        "aten::equal",
        "aten::is_nonzero",
    }
)
SYNC_CALLS = frozenset(
    {
        "AscendCL@aclrtSynchronizeDevice",
        "AscendCL@aclrtSynchronizeStream",
        "AscendCL@aclrtSynchronizeStreamWithTimeout",
        "AscendCL@aclrtSynchronizeDeviceWithTimeout",
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
    }
)
LOADER_PREFIX = "enumerate(DataLoader)#"


def _outermost(ops: list[HostOp]) -> list[HostOp]:
    """Drop ops nested in another op of the list on the same thread (item -> _local_scalar_dense)."""
    out: list[HostOp] = []
    for op in sorted(ops, key=lambda o: (o.tid, o.start, -o.dur)):
        if out and out[-1].tid == op.tid and op.start >= out[-1].start and op.end <= out[-1].end:
            continue
        out.append(op)
    return out


@detector("PERF201")
def host_bound(a: Analysis) -> list[Finding]:
    steps = [s for s in a.steps if s.total_us > 0]
    if not steps or a.tl.device == "cpu":
        return []
    if steps[0].source == "kernel list":
        a.tl.note("free time from kernel_details.csv alone is not judged: the list may not hold every task")
        return []
    bound = [s for s in steps if s.free_share >= limit("PERF201", "min_free_share")]
    if not bound:
        return []
    free = sum(s.free_us for s in bound) / len(bound)
    share = sum(s.free_share for s in bound) / len(bound)
    worst = max(bound, key=lambda s: s.free_share)
    if len(steps) == 1 and steps[0].step is None:
        label = "the profile (no ProfilerStep marks: idle time between iterations counts too)"
    else:
        label = "the step" if len(steps) == 1 else f"{len(bound)} of {len(steps)} steps"
    message = (
        f"the device was idle {pct(share)} of {label} ({us(free)} free per step; "
        f"worst: step {worst.step}, {pct(worst.free_share)})"
    )
    return [
        make(
            "PERF201",
            message,
            {
                "steps": [{"step": s.step, "free_us": s.free_us, "total_us": s.total_us} for s in bound],
                "mean_free_share": round(share, 6),
                "source": steps[0].source,
            },
            free,
            rank=a.rank,
            share=share,
        )
    ]


def _per_step(
    a: Analysis, names: frozenset[str], nested_in: frozenset[str] = frozenset()
) -> list[list[HostOp]]:
    out = []
    for w in a.ctx.windows:
        ops = a.ctx.host_ops_in(w, names | nested_in)
        outer = _outermost(ops)
        out.append([op for op in outer if op.name in names])
    return out


@detector("PERF202")
def host_syncs(a: Analysis) -> list[Finding]:
    per_step = _per_step(a, SYNC_OPS)
    counts = [len(ops) for ops in per_step]
    if not any(counts) or max(counts) < limit("PERF202", "min_per_step"):
        return []
    steps = max(1, len(a.ctx.windows))
    flat = [op for ops in per_step for op in ops]
    names = Counter(op.name.removeprefix("aten::") for op in flat)
    waited = sum(op.dur for op in flat) / steps
    listed = ", ".join(f"{n} x{c}" for n, c in names.most_common(4))
    mean = sum(counts) / steps
    locations = host_locations(a, flat)
    message = f"{mean:.3g} host sync(s) per step ({listed}); the host waited {us(waited)} per step in them"
    if not locations:
        message += "; record with with_stack=True to see their source lines"
    return [
        make(
            "PERF202",
            message,
            {"per_step": counts, "ops": dict(names), "waited_us_per_step": round(waited, 3)},
            waited,
            locations=locations,
            rank=a.rank,
            share=waited / a.mean_step_us if a.mean_step_us else None,
        )
    ]


@detector("PERF203")
def explicit_synchronize(a: Analysis) -> list[Finding]:
    per_step = _per_step(a, SYNC_CALLS, nested_in=SYNC_OPS | {"aten::to", "aten::_to_copy", "aten::copy_"})
    counts = [len(ops) for ops in per_step]
    if not any(counts) or max(counts) < limit("PERF203", "min_per_step"):
        return []
    flat = [op for ops in per_step for op in ops]
    steps = max(1, len(a.ctx.windows))
    waited = sum(op.dur for op in flat) / steps
    names = Counter(op.name.removeprefix("AscendCL@") for op in flat)
    listed = ", ".join(f"{n} x{c}" for n, c in names.most_common(3))
    return [
        make(
            "PERF203",
            f"{sum(counts) / steps:.3g} explicit synchronisation(s) per step ({listed}), "
            f"{us(waited)} per step",
            {"per_step": counts, "calls": dict(names), "waited_us_per_step": round(waited, 3)},
            waited,
            locations=host_locations(a, flat),
            rank=a.rank,
        )
    ]


@detector("PERF205")
def slow_dataloader(a: Analysis) -> list[Finding]:
    step_us = a.mean_step_us
    if not step_us:
        return []
    loads = []
    for w in a.ctx.windows:
        ops = a.ctx.host_ops_in(w, match=lambda name: name.startswith(LOADER_PREFIX))
        loads.append(sum(op.dur for op in _outermost(ops)))
    spent = sum(loads) / max(1, len(loads))
    if not spent or spent / step_us < limit("PERF205", "min_share"):
        return []
    return [
        make(
            "PERF205",
            f"fetching the next batch took {us(spent)} per step ({pct(spent / step_us)} of the step)",
            {"per_step_us": [round(x, 3) for x in loads]},
            spent,
            rank=a.rank,
            share=spent / step_us,
        )
    ]
