"""Dataflow between the records of a dump: which recorded outputs a module call's inputs
were, which child calls it made, and how much a linear layer can amplify noise.

Written into each ``forward.output`` record while dumping (docs/contracts.md §5):

* ``src`` - positions (in ``records``) of the outputs this call's inputs were: the same
  tensor object (or a view of it) at the same version. The model's own inputs have no
  source; ``-1`` marks a call whose inputs cannot be traced.
* ``scope`` - for an input made by the caller's own code (a residual sum), what that code
  could have used: the caller's inputs and its children's outputs so far.
* ``kids`` - positions of the outputs of the calls made inside this one.
* ``xnorm`` - the norm of the call's first floating input (for how far its input gradient
  cancels).
* ``cond`` - how much the call can amplify a relative error of its input. Linear and
  convolutions: ``sqrt(rows) * |W| * rms(x) / |y|``, how much larger the output would be
  for an input of random direction than it is; above 1 the layer cancels (a
  squeeze-excite reduction of pooled features). Normalisations with their own statistics
  (BatchNorm in training, LayerNorm, GroupNorm, InstanceNorm): ``sqrt(mean(E[x^2] /
  Var(x)))`` over the groups they normalise; a BatchNorm channel over a batch of 2 at 1x1
  holds two values, and when they are close its output is the sign of their difference.
  Average pools: ``rms(x) / rms(y)``, a bound: a window's mean error is at most the rms of
  its errors, so an error the window shares (a BatchNorm statistic rounded in bf16 shifts
  a whole channel) passes whole while the mean of values that cancel is small.

Compare uses them to tell an error a module made from one it was handed (carry.py).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any

from migrate.precision.flatten import iter_tensors
from migrate.precision.manifest import MAX_LINKS
from migrate.precision.shards import Later

UNKNOWN = -1


@dataclass
class _Frame:
    src: set[int] = field(default_factory=set)
    scope: set[int] = field(default_factory=set)  # what the caller's own code could use
    kids: list[int] = field(default_factory=list)
    rms_in: float | None = None
    cond: float | None = None
    inherited: float | None = None  # cond of the caller whose own code made an input
    xnorm: int | float | None = None  # the first input's norm, or its record's position
    linear: bool = False  # _is_linear(module), judged once on enter where rms_in is taken


class Lineage:
    def __init__(self) -> None:
        self._origin: dict[int, tuple[Any, int, int]] = {}
        self._frames: list[_Frame] = []
        self._wnorm: dict[int, tuple[Any, int, float]] = {}
        # per returned call: (first record, xnorm or its record, cond, inherited cond,
        # (|W|, W's rows, rms of the input) of a linear layer)
        self._pending: list[tuple[int, Any, float | None, float | None, tuple | None]] = []

    def _lookup(self, t: Any) -> int | None:
        for obj in (t, getattr(t, "_base", None)):
            if obj is None:
                continue
            hit = self._origin.get(id(obj))
            if hit is not None and hit[0]() is obj and obj._version == hit[1]:
                return hit[2]
        return None

    def enter(self, module: Any, call_args: Any, later: Any = None) -> None:
        """A module call starts: resolve where its floating inputs came from. ``later(t,
        fn)``, when given, returns a ``Later`` of ``fn`` of a recorded tensor's staged copy
        (computed off the hook's path, the same value) or None: then ``fn(t)`` runs now."""

        def value(t: Any, fn: Any) -> Any:
            found = later(t, fn) if later is not None else None
            return fn(t.detach()) if found is None else found

        frame = _Frame()
        unknown = False
        for _, t in iter_tensors(call_args):
            if not (t.is_floating_point() or t.is_complex()):
                continue
            pos = self._lookup(t)
            if pos is None:
                unknown = True
            else:
                frame.src.add(pos)
            if frame.xnorm is None and t.is_floating_point() and t.numel():
                frame.xnorm = pos if pos is not None else value(t, _norm)
        if unknown and self._frames:  # made by the caller's code (the root's: the inputs)
            parent = self._frames[-1]
            frame.scope.update(parent.src | parent.scope)
            frame.scope.update(parent.kids)
            frame.scope -= frame.src
            frame.inherited = parent.cond  # that code may be the caller's own norm
        x = next((t for _, t in iter_tensors(call_args)), None)
        if x is not None and x.is_floating_point() and x.numel():
            frame.linear = _is_linear(module)
            if frame.linear or _is_mean_pool(module):
                frame.rms_in = value(x, _rms)
            else:
                cond = _norm_cond(module, x)
                frame.cond = None if cond is None else value(x, cond)
        self._frames.append(frame)

    def leave(self, module: Any, records: list[dict], first: int, output: Any) -> None:
        """The call returned and its outputs were recorded as ``records[first:]``. What
        needs the records' stats (``xnorm`` from a recorded input, a linear layer's
        ``cond``) is written by ``finish`` once the stats exist."""
        frame = self._frames.pop() if self._frames else _Frame(src={UNKNOWN})
        made = list(range(first, len(records)))
        src = sorted(frame.src)[:MAX_LINKS]
        kids = frame.kids[-MAX_LINKS:]
        scope = sorted(frame.scope)[-MAX_LINKS:]
        for pos in made:
            records[pos]["src"], records[pos]["kids"] = src, kids
            if scope:
                records[pos]["scope"] = scope
        if made:
            linear: tuple[float | None, int, Any] | None = None
            if frame.rms_in is not None and frame.linear:
                linear = (self._weight_norm(module.weight), module.weight.shape[0], frame.rms_in)
            elif frame.rms_in is not None:  # a mean pool: no weight
                linear = (None, 0, frame.rms_in)
            self._pending.append((first, frame.xnorm, frame.cond, frame.inherited, linear))
        for pos, (_, t) in zip(made, iter_tensors(output), strict=False):
            try:
                self._origin[id(t)] = (weakref.ref(t), t._version, pos)
            except TypeError:
                pass
        if self._frames:
            self._frames[-1].kids.extend(made)

    def finish(self, records: list[dict]) -> None:
        """Write ``xnorm`` and ``cond`` of every call that returned, from the records'
        stats (every record has its stats now)."""
        for first, xnorm, cond, inherited, linear in self._pending:
            rec = records[first]
            if isinstance(xnorm, Later):
                xnorm = xnorm.value
            elif xnorm is not None and not isinstance(xnorm, float):
                xnorm = (records[xnorm].get("stats") or {}).get("norm")
            cond, inherited = _resolved(cond), _resolved(inherited)
            if isinstance(xnorm, float) and math.isfinite(xnorm):
                rec["xnorm"] = xnorm
            found = [
                c for c in (cond, inherited, _linear_cond(linear, rec)) if c is not None and math.isfinite(c)
            ]
            if found:
                rec["cond"] = round(max(found), 4)
        self._pending.clear()

    def _weight_norm(self, weight: Any) -> float:
        hit = self._wnorm.get(id(weight))
        if hit is not None and hit[0]() is weight and hit[1] == weight._version:
            return hit[2]
        value = _norm(weight)
        self._wnorm[id(weight)] = (weakref.ref(weight), weight._version, value)
        return value

    def clear(self) -> None:
        self._origin.clear()
        self._frames.clear()
        self._wnorm.clear()
        self._pending.clear()


def _linear_cond(linear: tuple | None, rec: dict) -> float | None:
    """``sqrt(rows) * |W| * rms(x) / |y|`` of a linear layer's call, ``rec`` its output;
    ``rms(x) / rms(y)`` of a mean pool's (no weight: ``linear[0]`` None)."""
    if linear is None:
        return None
    wnorm, out_features, rms_in = linear
    rms_in = _resolved(rms_in)
    if rms_in is None:
        return None
    y = (rec.get("stats") or {}).get("norm")
    if not isinstance(y, (int, float)) or not y or not math.isfinite(y):
        return None
    if wnorm is None:
        numel = math.prod(rec["shape"])
        return rms_in * math.sqrt(numel) / y if numel else None
    rows = math.prod(rec["shape"]) / max(out_features, 1)
    return math.sqrt(rows) * wnorm * rms_in / y


def _resolved(value: Any) -> Any:
    return value.value if isinstance(value, Later) else value


def _rms(t: Any) -> float:
    return _norm(t) / math.sqrt(t.numel())


def _norm(t: Any) -> float:
    from migrate.precision.metrics.pair import norm

    return norm(t.detach())


def _is_linear(module: Any) -> bool:
    """A module computing ``W x (+ b)`` with W's first axis the output features."""
    import torch

    weight = getattr(module, "weight", None)
    return (
        isinstance(module, (torch.nn.Linear, torch.nn.modules.conv._ConvNd))
        and not isinstance(module, torch.nn.modules.conv._ConvTransposeNd)
        and isinstance(weight, torch.Tensor)
        and weight.dim() >= 2
    )


def _is_mean_pool(module: Any) -> bool:
    """An average pool (a squeeze-excite's squeeze): each output the mean of a window."""
    from torch.nn.modules import pooling

    return isinstance(module, (pooling._AdaptiveAvgPoolNd, pooling._AvgPoolNd))


def _norm_cond(module: Any, x: Any) -> Any:
    """The function computing the cond (below) of ``module`` on input ``x`` (of x's
    values, its shape and the module's settings taken now), or None for any other module
    and for BatchNorm on running statistics (an affine map).

    How much a normalisation with its own statistics amplifies a relative error of its
    input: a group's output error is the input error over the group's standard deviation,
    its value the centred input over sqrt(var + eps), so over the groups it normalises
    (BatchNorm in training: channels; LayerNorm: rows) ``cond^2 = sum(E[x^2] / (var +
    eps)) / sum(var / (var + eps))`` for errors proportional to the values, and
    ``mean(E[x^2]) sum(1 / (var + eps)) / sum(var / (var + eps))`` for errors of one size
    (groups of small values come out as large as the rest); the larger of the two."""
    import torch
    from torch.nn.modules import batchnorm, instancenorm

    shape = tuple(x.shape)
    if isinstance(module, instancenorm._InstanceNorm):
        groups = shape[:2] + (-1,) if len(shape) > 2 else (1, *shape)
    elif isinstance(module, batchnorm._BatchNorm):
        if (not module.training and module.track_running_stats) or len(shape) < 2:
            return None
        groups = None  # channels first
    elif isinstance(module, torch.nn.GroupNorm):
        groups = (shape[0], module.num_groups, -1)
    elif isinstance(module, torch.nn.LayerNorm):
        groups = (-1, math.prod(module.normalized_shape))
    else:
        return None
    eps = float(getattr(module, "eps", 0.0) or 0.0)

    def cond(v: Any) -> float | None:
        v = v.reshape(shape)
        g = v.transpose(0, 1).reshape(shape[1], -1) if groups is None else v.reshape(groups)
        return _group_cond(g, eps)

    return cond


def _group_cond(groups: Any, eps: float) -> float | None:
    if groups.shape[-1] < 2:
        return None
    g = groups.double()
    var, power = g.var(-1, unbiased=False), g.square().mean(-1)
    scale = var + eps
    scale = scale.clamp_min(float(scale.max()) * 1e-30 + 1e-300)
    den = float((var / scale).sum())
    if den <= 0.0:
        return _CONSTANT
    # errors proportional to each value, or of one size everywhere (then the groups of
    # small values, scaled up to the others' size, carry the most)
    relative = float((power / scale).sum()) / den
    uniform = float(power.mean()) * float((1.0 / scale).sum()) / den
    return min(math.sqrt(max(relative, uniform)), _CONSTANT)


# cond of a normalisation whose every group is constant: its output is rounding noise.
_CONSTANT = 1e6
