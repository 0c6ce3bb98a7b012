"""Findings on compilation: operators compiled while the steps run (PERF102) and
torch.compile on an NPU module (PERF204).

PERF102 takes two kinds of evidence. On Ascend, ACL's compile calls in the steps
(``AscendCL@opCompile``, ``AscendCL@aclopCompile*``: an operator built for a new shape with
jit_compile on). And the same operator type running with input shapes that change from
step to step, counted only for tasks that are not aclnn binary kernels (``aclnn*`` tasks
are prebuilt for every shape and never recompile: their OP State says "dynamic" without
any cost, so that column alone is no evidence). A one-step profile shows no change.
"""

from __future__ import annotations

from collections import defaultdict

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import host_locations, pct, us
from migrate.perf.model import Finding
from migrate.perf.timeline import HostOp

COMPILE_CALLS = ("AscendCL@opCompile", "AscendCL@aclopCompile", "AscendCL@aclopCompileAndExecute")
COMPILED_REGIONS = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo Cache Lookup")


def _compile_calls(a: Analysis) -> tuple[list[HostOp], float]:
    calls: list[HostOp] = []
    for w in a.ctx.windows:
        calls.extend(a.ctx.host_ops_in(w, match=lambda name: name.startswith(COMPILE_CALLS)))
    # aclopCompileAndExecute holds opCompile: count the outermost of each thread's calls
    calls.sort(key=lambda o: (o.tid, o.start, -o.dur))
    outer: list[HostOp] = []
    for op in calls:
        if outer and outer[-1].tid == op.tid and op.end <= outer[-1].end:
            continue
        outer.append(op)
    return outer, sum(op.dur for op in outer)


def _changing_shapes(a: Analysis) -> dict[str, int]:
    """op type -> distinct input shapes across steps, for jit-compiled (non-aclnn) tasks
    whose shapes differ between steps."""
    if len(a.ctx.windows) < 2:
        return {}
    cols, strings = a.tl.device_ops.cols, a.tl.strings
    shapes: dict[str, list[set[int]]] = defaultdict(lambda: [set() for _ in a.ctx.windows])
    for k, w in enumerate(a.ctx.windows):
        for i in w.ops:
            if not cols["shapes"][i] or strings[cols["name"][i]].startswith(("aclnn", "hcom_")):
                continue
            shapes[strings[cols["type"][i]]][k].add(cols["shapes"][i])
    out = {}
    for kind, per_step in shapes.items():
        seen = [s for s in per_step if s]
        if len(seen) > 1 and any(s != seen[0] for s in seen[1:]):
            out[kind] = len(set().union(*seen))
    return out


@detector("PERF102")
def operator_compilation(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    calls, spent = _compile_calls(a)
    changing = _changing_shapes(a)
    if len(calls) < limit("PERF102", "min_compiles") and not changing:
        return []
    steps = max(1, len(a.ctx.windows))
    parts = []
    if calls:
        parts.append(
            f"{len(calls)} operator compilation(s) in the profiled steps took {us(spent / steps)} per step"
        )
        if a.mean_step_us:
            parts[-1] += f" ({pct(spent / steps / a.mean_step_us)} of the step)"
    if changing:
        listed = ", ".join(
            f"{k} ({n} shapes)" for k, n in sorted(changing.items(), key=lambda kv: -kv[1])[:5]
        )
        parts.append(f"operators whose input shapes change between steps: {listed}")
    return [
        make(
            "PERF102",
            "; ".join(parts),
            {"compilations": len(calls), "compile_us": round(spent, 3), "changing_shapes": changing},
            spent / steps if calls else None,
            locations=host_locations(a, calls),
            rank=a.rank,
        )
    ]


@detector("PERF204")
def compiled_module(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    regions: list[HostOp] = []
    for w in a.ctx.windows:
        regions.extend(a.ctx.host_ops_in(w, match=lambda name: name.startswith(COMPILED_REGIONS)))
    if not regions:
        return []
    spent = sum(op.dur for op in regions) / max(1, len(a.ctx.windows))
    return [
        make(
            "PERF204",
            f"torch.compile'd regions ran on the NPU: {len(regions)} call(s), "
            f"{us(spent)} per step on the host",
            {"calls": len(regions), "host_us_per_step": round(spent, 3)},
            None,
            locations=host_locations(a, regions),
            rank=a.rank,
        )
    ]
