"""Why a unit ranks where it does: its share of the end error and how outlying the values
it lowers are.

* ``error_share``: the unit's end-to-end error energy, lowered alone, against the whole
  model's lowered (``(rel_err_unit / rel_err_whole)^2``: errors of independent roundings
  add in energy, so the shares of a model's units sum to about 1; above 1 the unit's error
  is partly cancelled by others');
* ``input_outlier`` / ``weight_outlier``: max |x| / RMS(x) of the floating tensors the unit
  takes as inputs over the calibration set (activations) and of its weights (a module's own
  parameters of 2 or more dims, else all of them; for an op unit, the parameters passed
  to it). A per-tensor int scale is set by the max: at a ratio of 100 most values use a
  few of int8's 127 steps; a Gaussian tensor of a million values has a ratio near 5.
"""

from __future__ import annotations

import math
from typing import Any

from migrate.precision.flatten import iter_tensors
from migrate.precision.sensitivity.measure import run_batches
from migrate.precision.sensitivity.units import Unit, op_name


class _Acc:
    """Running max |x|, sum x^2 and count of the tensors it sees."""

    def __init__(self) -> None:
        self.max, self.sq, self.n = 0.0, 0.0, 0

    def add(self, t: Any) -> None:
        x = t.detach().float()
        if not x.numel():
            return
        self.max = max(self.max, float(x.abs().max()))
        self.sq += float(x.pow(2).sum())
        self.n += x.numel()

    def ratio(self) -> float | None:
        if not self.n:
            return None
        rms = math.sqrt(self.sq / self.n)
        return self.max / rms if rms > 0 else None


def _weights(module: Any) -> list[Any]:
    params = [p for p in module.parameters(recurse=False) if p.is_floating_point()]
    big = [p for p in params if p.dim() >= 2]
    return big or params


class _Seen:
    """What the units saw: inputs and weights per unit."""

    def __init__(self, units: list[Unit]) -> None:
        self.inputs: dict[str, _Acc] = {u.name: _Acc() for u in units}
        self.weights: dict[str, _Acc] = {u.name: _Acc() for u in units}
        self._params: set[tuple[str, int]] = set()

    def tensors(self, unit: str, obj: Any) -> None:
        """Floating tensors of a call: parameters as weights (each once), the rest inputs."""
        import torch

        for _, t in iter_tensors(obj):
            if not t.is_floating_point():
                continue
            if not isinstance(t, torch.nn.Parameter):
                self.inputs[unit].add(t)
            elif (unit, id(t)) not in self._params:
                self._params.add((unit, id(t)))
                self.weights[unit].add(t)


def _op_mode(ops: dict[str, str], seen: _Seen) -> Any:
    import torch

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            unit = ops.get(op_name(func))
            if unit is not None:
                seen.tensors(unit, (args, kwargs))
            return func(*args, **kwargs)

    return Mode()


def outlier_ratios(model: Any, batches: list, units: list[Unit]) -> dict[str, dict[str, float | None]]:
    """``{unit: {"input_outlier", "weight_outlier"}}`` over one pass of ``batches``."""
    import contextlib

    seen = _Seen(units)
    owners: dict[str, list[str]] = {}
    for u in units:
        for m in u.modules:
            owners.setdefault(m, []).append(u.name)
            for p in _weights(model.get_submodule(m)):
                seen.weights[u.name].add(p)

    def pre(name: str):
        def fn(mod, args, kwargs):
            for unit in owners[name]:
                for _, t in iter_tensors((args, kwargs)):
                    if t.is_floating_point():
                        seen.inputs[unit].add(t)

        return fn

    ops = {u.name[3:]: u.name for u in units if u.kind == "op"}
    handles = [model.get_submodule(m).register_forward_pre_hook(pre(m), with_kwargs=True) for m in owners]
    try:
        with _op_mode(ops, seen) if ops else contextlib.nullcontext():
            run_batches(model, batches)
    finally:
        for h in handles:
            h.remove()
    return {
        u.name: {"input_outlier": seen.inputs[u.name].ratio(), "weight_outlier": seen.weights[u.name].ratio()}
        for u in units
    }


def explain(rows: list[dict], whole: dict | None, ratios: dict[str, dict]) -> None:
    """Each ranking row gets ``why``: its error share and outlier ratios (in place)."""
    total = (whole or {}).get("rel_err")
    for row in rows:
        rel = row["effect"].get("rel_err")
        share = None
        if rel is not None and total and math.isfinite(total) and math.isfinite(rel):
            share = (rel / total) ** 2
        row["why"] = {"error_share": share, **ratios.get(row["name"], {})}
