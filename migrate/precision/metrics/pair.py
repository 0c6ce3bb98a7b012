"""A Pair: reference and target tensors prepared once for every tensor metric."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

# Below this a float32 sum of squares loses elements to underflow (squares under 1e-38
# flush to subnormals and zero): the norm of a tensor of 1e-22 values comes out 0.
TINY_NORM = 1e-17


def norm(t: Any) -> float:
    """L2 norm of a numpy array or a torch tensor, accurate to ~1e-7 relative: squares
    summed in float32 per row of 1024 and in float64 across rows (``_sum_squares``), in
    float64 throughout when float32 squares would
    overflow or underflow (values above ~1e19 or below ~1e-19, as in a randomly
    initialised deep network whose activations vanish)."""
    import numpy as np

    if not isinstance(t, np.ndarray):
        return _torch_norm(t)
    if not t.size:
        return 0.0
    if t.dtype != np.float64:
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # float64 below
            n = math.sqrt(_sum_squares(t.ravel()))
        if TINY_NORM <= n < math.inf:
            return n
        if n == 0.0 and not t.any():  # all zeros (an unchanged tensor's difference)
            return 0.0
    wide = t.astype(np.float64, copy=False).ravel()
    return math.sqrt(float(np.add.reduce(np.square(wide))))


_ROW = 1024


def _sum_squares(flat: Any) -> float:
    """Sum of squares: float32 within rows of 1024 elements (einsum, no temporary), the
    rows' sums in float64 - about 5e-9 relative on 4 M normal values, 5x faster than
    squaring into a temporary and summing in float64."""
    import numpy as np

    if flat.dtype != np.float32:
        return float(np.add.reduce(np.square(flat, dtype=np.float32), dtype=np.float64))
    whole = flat.size // _ROW * _ROW
    rows = flat[:whole].reshape(-1, _ROW)
    tail = flat[whole:].astype(np.float64)
    return float(np.einsum("ij,ij->i", rows, rows).sum(dtype=np.float64)) + float(np.dot(tail, tail))


def _torch_norm(t: Any) -> float:
    import torch

    if not t.numel():
        return 0.0
    n = float(torch.linalg.vector_norm(t))
    if (math.isinf(n) or n < TINY_NORM) and t.dtype != torch.float64:
        n = float(torch.linalg.vector_norm(t, dtype=torch.float64))
    return n


def cosine_from_norms(na: float, nb: float, nd: float) -> float:
    """1 - cos = (|d|^2 - (|r| - |t|)^2) / (2 |r| |t|): accurate near cos = 1 (where the
    thresholds live) without float64 copies; clamped to [-1, 1]."""
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    cos = 1.0 - (nd**2 - (na - nb) ** 2) / (2.0 * na * nb)
    return max(-1.0, min(1.0, cos))


# The largest finite value of each floating dtype (by its name in a dump).
_FLOAT_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
    "float8_e4m3fn": 448.0,
    "float8_e5m2": 57344.0,
    "complex64": 3.4028234663852886e38,
    "complex128": 1.7976931348623157e308,
}


def extreme(*dtypes: str) -> float:
    """Half the largest finite value of the narrowest floating dtype given (inf if none):
    a value that large is a mask or a sentinel (``finfo.min`` filling an additive attention
    mask), not a number to measure relative error on."""
    tops = [_FLOAT_MAX[d] for d in dtypes if d in _FLOAT_MAX]
    return min(tops) / 2 if tops else math.inf


def dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _flat(a: Any, wide: Any) -> Any:
    import numpy as np

    if np.iscomplexobj(a):
        a = a.view(a.real.dtype)  # real pairs
    return a.reshape(-1).astype(wide, copy=False)


class Pair:
    """Reference ``ref`` and target ``tgt`` (same shape; numpy arrays or torch tensors)
    flattened to float32 (float64 when either side is 64-bit; bf16/fp16 upcast exactly;
    complex as real pairs). NaN/Inf are counted and left out; so are dtype-extreme values
    (beyond half the narrower dtype's range, infinities included) of the same sign on both
    sides: they act alike (a ``finfo.min`` mask in fp32 and in fp16 masks the same
    positions), whatever their magnitude. ``th`` holds the thresholds the elementwise
    metrics use: rtol, atol (absolute), atol_rms (a fraction of the reference's RMS) and
    rel_floor. ``dtypes`` are the two sides' dtypes as stored (default: the inputs')."""

    def __init__(self, ref: Any, tgt: Any, th: dict[str, Any], dtypes: tuple[str, str] | None = None) -> None:
        import numpy as np

        from migrate.precision.arrays import from_torch

        dtypes = dtypes or (dtype_name(ref), dtype_name(tgt))
        ref, tgt = from_torch(ref), from_torch(tgt)
        wide64 = {"float64", "complex128", "int64"}
        wide = np.float64 if wide64 & set(dtypes) or np.float64 in (ref.dtype, tgt.dtype) else np.float32
        big = extreme(*dtypes)
        ref, tgt = _flat(ref, wide), _flat(tgt, wide)
        self.numel = ref.size
        self.nan = self.inf = self.ref_nonfinite = self.nonfinite_mismatch = self.masked = 0
        # Norms are finite iff every element is, and below ``big`` when no element is
        # extreme: both checks cost nothing extra.
        self.norm_ref, self.norm_tgt = norm(ref), norm(tgt)
        if (
            not (math.isfinite(self.norm_ref) and math.isfinite(self.norm_tgt))
            or max(self.norm_ref, self.norm_tgt) >= big
        ):
            ref, tgt = self._drop_nonfinite(ref, tgt, big)
        self.ref, self.tgt = ref, tgt
        self.rtol = float(th.get("rtol") or 0.0)
        self.rel_floor = float(th.get("rel_floor") or 1e-3)
        # norm_floor: a reference far below what it was computed from (a bias gradient
        # that cancels; a gradient through a one-hot softmax row) may be rounding noise:
        # where the two runs also disagree in direction it is judged against that scale
        floor = float(th.get("norm_floor") or 0.0)
        self.below_floor = self.norm_ref < floor and self._disagree(th.get("cosine_min"))
        self.norm_floor = floor if self.below_floor else 0.0
        scale = max(self.norm_ref, self.norm_floor)
        rms = scale / math.sqrt(ref.size) if ref.size else 0.0
        self.rms_ref = rms
        self.atol = max(float(th.get("atol") or 0.0), float(th.get("atol_rms") or 0.0) * rms)

    def _drop_nonfinite(self, ref: Any, tgt: Any, big: float) -> tuple[Any, Any]:
        import numpy as np

        with np.errstate(invalid="ignore"):
            ext_r, ext_t = np.abs(ref) >= big, np.abs(tgt) >= big  # infinities included
        fin_r, fin_t = np.isfinite(ref), np.isfinite(tgt)
        both = fin_r & fin_t & ~ext_r & ~ext_t
        self.nan = int(np.count_nonzero(np.isnan(tgt)))
        self.inf = int(np.count_nonzero(np.isinf(tgt)))
        self.ref_nonfinite = int(np.count_nonzero(~fin_r))
        alike = ext_r & ext_t & (np.signbit(ref) == np.signbit(tgt))
        self.masked = int(np.count_nonzero(alike))
        same = alike | (ref == tgt) | (np.isnan(ref) & np.isnan(tgt))
        self.nonfinite_mismatch = int(np.count_nonzero(~both & ~same))
        ref, tgt = ref[both], tgt[both]
        self.norm_ref, self.norm_tgt = norm(ref), norm(tgt)
        return ref, tgt

    def _disagree(self, cosine_min: Any) -> bool:
        """The two runs point in different directions (cosine below ``cosine_min``)."""
        limit = 1.0 if cosine_min is None else float(cosine_min)
        return cosine_from_norms(self.norm_ref, self.norm_tgt, self.norm_diff) < limit

    @cached_property
    def diff(self) -> Any:
        return self.tgt - self.ref

    @cached_property
    def norm_diff(self) -> float:
        return norm(self.diff)

    @cached_property
    def exact(self) -> bool:
        """Every (finite) element equal: the elementwise metrics are known without a pass
        (an unchanged parameter, integer inputs - most of a port's weights)."""
        return self.norm_diff == 0.0 and not self.diff.any()  # float64 squares can underflow

    @cached_property
    def absdiff(self) -> Any:
        import numpy as np

        return np.abs(self.diff)

    @cached_property
    def absref(self) -> Any:
        import numpy as np

        return np.abs(self.ref)

    @cached_property
    def effective_numel(self) -> float:
        """|r|^4 / sum(r^4): how many elements carry the reference (n for a flat tensor,
        1 for a single spike), computed on r / max|r| (no under/overflow)."""
        import numpy as np

        if not self.ref.size:
            return 0.0
        top = float(self.absref.max())
        if top == 0.0:
            return 0.0
        sq = np.square(self.absref / top)
        return float(sq.sum(dtype=np.float64)) ** 2 / max(float(np.square(sq).sum(dtype=np.float64)), 1e-300)

    @cached_property
    def floor(self) -> float:
        """Denominator floor for relative errors: near-zero references are not judged by
        relative error (msprobe divides by |ref| + eps, which flags noise around zero)."""
        return max(self.atol, self.rel_floor * self.rms_ref, 1e-30)

    @cached_property
    def relerr(self) -> Any:
        import numpy as np

        out = np.maximum(self.absref, self.floor)
        return np.divide(self.absdiff, out, out=out)


def count(mask: Any) -> int:
    import numpy as np

    return int(np.count_nonzero(mask))
