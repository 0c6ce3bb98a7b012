"""Gradients that may be rounding noise: the scale a gradient record is judged against.

A module's output gradient is computed by its parent's backward from the parent's output
gradient. When it is far below that (less than the class's ``grad_floor`` share: CLIP's
last text layer, whose queries and keys get 4e-8 against 1.5 flowing through the
attention, because only one token feeds the loss and its softmax row is one-hot) it may
be rounding noise of the reference: then its direction means nothing and a low-precision
run holds exact zeros or noise of its own there. Such a gradient is judged relative to the
share of the enclosing gradient, and so is everything computed from it (the module's
input and weight gradients, linear in it, scaled by the same factor). So is a weight
gradient far below its module's output gradient (a reduction cancelling to zero: a key
projection's bias under softmax, 3.6e-11 against 1.4e-4).

A small gradient can also be exact: ConvNeXt's layer scale multiplies each block's branch
by 1e-6, and its gradients by the same. Rounding noise has no direction, so the floor is
used only where the two runs disagree in direction (cosine below the class's limit,
metrics/pair.py); where they agree, the gradient is judged as itself and a wrong factor
on it is caught.

``grad_floor`` is a share per precision class (thresholds.yaml): the noise a class's
rounding leaves is proportional to its unit roundoff.
"""

from __future__ import annotations

import math

_OUT = "backward.grad_output"


def _parent(name: str) -> str | None:
    if name == "<root>":
        return None
    return name.rpartition(".")[0] or "<root>"


class GradFloors:
    """Output-gradient norms of a reference dump's modules, for the floors of its
    gradient records."""

    def __init__(self, records: list[dict]) -> None:
        sums: dict[str, float] = {}
        for rec in records:
            norm = (rec.get("stats") or {}).get("norm")
            if rec["kind"] == _OUT and isinstance(norm, (int, float)) and math.isfinite(norm):
                sums[rec["name"]] = sums.get(rec["name"], 0.0) + float(norm) ** 2
        self.out = {k: v**0.5 for k, v in sums.items()}
        self._scales: dict[tuple[str, float], float] = {}

    def _enclosing(self, name: str) -> str | None:
        up = _parent(name)
        while up is not None and up not in self.out:
            up = _parent(up)
        return up

    def scale(self, name: str, share: float) -> float:
        """The module's output-gradient norm, or its enclosing module's scale when it is
        below ``share`` of that (nested wrappers of one tiny gradient share one scale)."""
        key = (name, share)
        hit = self._scales.get(key)
        if hit is None:
            up = self._enclosing(name)
            above = self.scale(up, share) if up is not None else 0.0
            own = self.out.get(name, 0.0)
            hit = self._scales[key] = own if own >= share * above else above
        return hit

    def floor(self, rec: dict, share: float) -> float:
        """The norm below which ``rec`` (a backward record) may be rounding noise."""
        name, kind = rec["name"], rec["kind"]
        up = self._enclosing(name)
        zero_out = share * self.scale(up, share) if up is not None else 0.0
        if kind == _OUT:
            return zero_out
        own = self.out.get(name)
        if own is None:
            return 0.0
        floor = share * own if kind == "backward.parameter" else 0.0
        if own < zero_out:  # computed from a tiny output gradient: scaled alike
            norm = (rec.get("stats") or {}).get("norm")
            if own == 0.0:
                return math.inf
            if isinstance(norm, (int, float)) and math.isfinite(norm):
                floor = max(floor, float(norm) * zero_out / own)
        return floor
