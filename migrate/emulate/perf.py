"""What the emulated run sees that costs time on the real NPU, per step: the raw
observations of the report's ``perf`` part. `migrate perf`'s catalog turns them into
findings with the same IDs and fixes as a profile's (migrate/perf/emulated.py).

A step ends at an optimizer's ``step()`` (a global post-hook) or a profiler's ``step()``,
once NPU ops ran since the last boundary; before the first boundary is step 0. Recorded:

* NPU ops and host syncs per step (the syncs' sites come from the monitor's findings);
* per op, the input-shape signatures of each step (a hash of the NPU inputs' shapes; at
  most ``MAX_SIGNATURES`` per op and step) and the site where a shape first changed after
  step 1 and before the last boundary (an op compiled again for each new shape in jit-compile
  mode; what runs after the loop, a checkpoint, compiles once);
* collectives (``c10d::*``) with the bytes of their NPU tensors, from the first step on;
* optimizers by class, with their steps; those stepping DTensor parameters (FSDP2's
  ``fully_shard``, tensor parallelism) apart, as ``sharded_optimizers``: torch_npu's fused
  optimizers do not combine with sharded parameters (rules/npu_affinity.yaml, MIG901);
* ``torch.compile`` calls on modules with NPU parameters, by site;
* the compile mode the program set (``torch_npu.npu.set_compile_mode(jit_compile=...)``).

Everything is bounded: ops, signatures and sites are capped, so a long run costs kilobytes.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["PerfRecord"]

MAX_OPS = 2000
MAX_SIGNATURES = 16
MAX_STEPS = 10_000
COLLECTIVE_NAMESPACES = ("c10d::", "_c10d_functional::", "c10d_functional::")
# ops of those namespaces that move no data: waiting for one, wrapping its result for
# autograd (functional collectives under DTensor), barriers; counted as small transfers they
# made FSDP2's example look like 2140 tiny collectives
NOT_TRANSFERS = frozenset({"wait_tensor", "_wrap_tensor_autograd", "barrier", "monitored_barrier_"})


class PerfRecord:
    def __init__(self) -> None:
        self.step = 0
        self.ops_since_boundary = 0
        self.steps: list[dict[str, int]] = [{"ops": 0, "syncs": 0}]
        self.shapes: dict[str, dict[int, set[int]]] = {}
        self.changed_at: dict[str, str] = {}  # op -> the site where its shapes first changed
        self.changed_in: dict[str, int] = {}  # op -> the step where they did
        self.collectives: dict[str, list[int]] = {}  # name -> [count, bytes, smallest bytes]
        self.optimizers: dict[str, int] = {}
        self.sharded_optimizers: dict[str, int] = {}  # stepping DTensor parameters
        self.compiled: dict[str, int] = {}  # site -> calls
        self.jit_compile: bool | None = None

    # -- recording --------------------------------------------------------------------------
    def boundary(self) -> None:
        if not self.ops_since_boundary or self.step >= MAX_STEPS:
            return
        self.step += 1
        self.ops_since_boundary = 0
        self.steps.append({"ops": 0, "syncs": 0})

    def op(self, name: str, flat: list, npu_tensor: type, site, shaped: bool = True) -> None:
        """One op on NPU tensors (inputs and outputs in ``flat``); ``site()`` gives its user
        call site (asked for only when its shapes change: it costs a stack walk);
        ``shaped`` False for views, which run no kernel to compile."""
        self.ops_since_boundary += 1
        self.steps[-1]["ops"] += 1
        if name.startswith(COLLECTIVE_NAMESPACES):
            # from the first step boundary on: the set-up's (FSDP2 scattering each parameter
            # to its shards) runs once, not per step
            moves = name.split("::", 1)[1].split(".", 1)[0] not in NOT_TRANSFERS
            if moves and self.step >= 1:
                self._collective(name, flat, npu_tensor)
            return
        if not shaped or (name not in self.shapes and len(self.shapes) >= MAX_OPS):
            return
        shapes = tuple(tuple(t.shape) for t in flat if isinstance(t, npu_tensor))
        if not shapes:
            return
        per_step = self.shapes.setdefault(name, {})
        seen = per_step.setdefault(self.step, set())
        if len(seen) < MAX_SIGNATURES:
            sig = hash(shapes)
            if sig not in seen:
                seen.add(sig)
                if (
                    self.step >= 2
                    and name not in self.changed_at
                    and not _seen_before(per_step, sig, self.step)
                ):
                    self.changed_at[name] = site()
                    self.changed_in[name] = self.step

    def _collective(self, name: str, flat: list, npu_tensor: type) -> None:
        size = sum(t.numel() * t.element_size() for t in flat if isinstance(t, npu_tensor))
        row = self.collectives.setdefault(name, [0, 0, size])
        row[0] += 1
        row[1] += size
        row[2] = min(row[2], size)

    def sync(self) -> None:
        self.steps[-1]["syncs"] += 1

    def optimizer_step(self, cls: str, sharded: bool = False) -> None:
        counts = self.sharded_optimizers if sharded else self.optimizers
        if len(counts) < 64 or cls in counts:
            counts[cls] = counts.get(cls, 0) + 1
        self.boundary()

    def compile_call(self, site: str) -> None:
        if len(self.compiled) < 64 or site in self.compiled:
            self.compiled[site] = self.compiled.get(site, 0) + 1

    def state(self) -> tuple:
        """Changes when what the part would say changes (the part writer's cue)."""
        return (
            self.step,
            self.steps[-1]["syncs"],
            len(self.changed_at),
            sum(v[0] for v in self.collectives.values()),
            sum(self.compiled.values()),
            self.jit_compile,
        )

    # -- the part ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        changing = {}
        # the steps between boundaries: before the first is set-up, after the last is what
        # the program does once its loop ended (a checkpoint), compiled once, not per step
        for name, per_step in self.shapes.items():
            counted = [s for step, s in per_step.items() if 1 <= step < self.step]
            union = set().union(*counted) if counted else set()
            if len(counted) > 1 and len(union) > 1 and self.changed_in.get(name, self.step) < self.step:
                changing[name] = {"shapes": len(union), "site": self.changed_at[name]}
        return {
            "steps": self.steps,
            "changing_shapes": changing,
            "collectives": {
                k: {"count": v[0], "bytes": v[1], "smallest": v[2]} for k, v in self.collectives.items()
            },
            "optimizers": dict(self.optimizers),
            "sharded_optimizers": dict(self.sharded_optimizers),
            "compiled_on_npu": dict(self.compiled),
            "jit_compile": self.jit_compile,
        }


def _seen_before(per_step: dict[int, set[int]], sig: int, step: int) -> bool:
    return any(sig in sigs for s, sigs in per_step.items() if 1 <= s < step)


def _npu_module(model: Any) -> bool:
    import torch

    from migrate.emulate.tensor import NpuTensor

    if not isinstance(model, torch.nn.Module):
        return False
    tensors = [*model.parameters(), *model.buffers()]
    return any(isinstance(t, NpuTensor) or getattr(t.device, "type", "") == "npu" for t in tensors[:64])


def _sharded(opt: Any) -> bool:
    """Does ``opt`` step DTensor parameters? (None exist before torch.distributed.tensor
    is imported, so it is never imported here.)"""
    dtensor = getattr(sys.modules.get("torch.distributed.tensor"), "DTensor", None)
    if dtensor is None:
        return False
    return any(isinstance(p, dtensor) for group in opt.param_groups for p in group["params"])


def watch_steps(perf: PerfRecord) -> None:
    """Step boundaries from every optimizer's step() (a global post-hook), and
    ``torch.compile`` calls on NPU modules (torch.compile is wrapped; what it returns is
    torch's own)."""
    import functools

    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from migrate.emulate.callsite import where

    register_optimizer_step_post_hook(
        lambda opt, args, kwargs: perf.optimizer_step(type(opt).__name__, _sharded(opt))
    )
    original = torch.compile
    if getattr(original, "_migrate_watched", False):
        return

    @functools.wraps(original)
    def compile(model=None, *args, **kwargs):  # noqa: A001 - torch's name
        if _npu_module(model):
            perf.compile_call(where(2))
        return original(model, *args, **kwargs)

    compile._migrate_watched = True
    torch.compile = compile
