"""PERF105: an Adam/AdamW step on the NPU that torch_npu's fused optimizer replaces.

The optimizer step is the ``Optimizer.step#<Class>.step`` host op torch.profiler records;
which classes have a fused counterpart, and its name, come from scan rule MIG901's table
(rules/npu_affinity.yaml), the rule whose fix makes the change: one table for both.

Not where the profile shows FSDP (its ``FSDP::`` marks, FSDP1's
``FullyShardedDataParallel.`` ones): the optimizer then steps sharded parameters (FSDP2's
DTensors, FSDP1's flat parameters), which torch_npu's fused optimizers do not take.
"""

from __future__ import annotations

import re
from functools import cache

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import host_locations, pct, us
from migrate.perf.model import Finding

_STEP = re.compile(r"Optimizer\.step#(\w+)\.step")
RULE = "MIG901"
_SHARDING_MARKS = ("FSDP::", "FullyShardedDataParallel.")


@cache
def fused_counterparts() -> dict[str, str]:
    """optimizer class name -> the torch_npu fused optimizer MIG901 replaces it with."""
    from migrate.core.rules import default_rules

    rule = next(r for r in default_rules() if r.code == RULE)
    names = rule.params.get("names", {})
    return {source.rsplit(".", 1)[-1]: target for source, target in names.items()}


def _sharded(a: Analysis) -> bool:
    """Does the profile record FSDP's host marks (sharded parameters)?"""
    strings = a.tl.strings
    return any(strings[sid].startswith(_SHARDING_MARKS) for sid in a.ctx.host_by_name)


@detector("PERF105")
def unfused_optimizer(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu" or _sharded(a):
        return []
    fused = fused_counterparts()
    found: dict[str, list] = {}
    for w in a.ctx.windows:
        for op in a.ctx.host_ops_in(w, match=lambda name: _STEP.fullmatch(name) is not None):
            m = _STEP.fullmatch(op.name)
            if m and m.group(1) in fused:
                found.setdefault(m.group(1), []).append(op)
    out = []
    step_us = a.mean_step_us
    for cls, ops in found.items():
        spent = sum(op.dur for op in ops) / max(1, len(a.ctx.windows))
        share = spent / step_us if step_us else 1.0
        if share < limit("PERF105", "min_share"):
            continue
        message = f"{cls}.step took {us(spent)} per step on the host"
        if step_us:
            message += f" ({pct(share)} of the step)"
        out.append(
            make(
                "PERF105",
                message,
                {"optimizer": cls, "host_us_per_step": round(spent, 3), "calls": len(ops)},
                spent,
                locations=host_locations(a, ops),
                rank=a.rank,
                share=share if step_us else None,
                fused=fused[cls],
            )
        )
    return out
