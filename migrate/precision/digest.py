"""The model's weights (parameters and buffers), recorded in a dump's meta: one digest for
the whole model and, per tensor, dtype, shape, CRC32, norm and projection sketch, so that
compare can name the weight that differs ("weights differ: h.2.mlp.c_fc.weight")."""

from __future__ import annotations

import hashlib
from typing import Any

from migrate.precision import crc


def crc32(t: Any) -> int:
    """CRC32 of a tensor's bytes (~4 GB/s; detects accidental differences, not tampering)."""
    import torch

    t = t.detach()
    if not t.numel():
        return 0
    flat = t.to("cpu").contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    return crc.crc32(flat.view(torch.uint8).numpy())


def weight_table(model: Any, buffers: bool | None = None) -> dict[str, dict[str, Any]]:
    """``{name: {dtype, shape, crc, norm, sketch}}`` for every entry of the state dict
    (``buffers``: True only buffers, False all but buffers, None everything)."""
    import torch

    from migrate.precision.sketch import encode, sketch

    names = {n for n, _ in model.named_buffers()} if buffers is not None else set()
    table = {}
    for name, t in model.state_dict(keep_vars=False).items():
        if not isinstance(t, torch.Tensor):
            continue
        if buffers is not None and (name in names) != buffers:
            continue
        t = t.detach()
        entry: dict[str, object] = {
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "crc": f"{crc32(t):08x}",
        }
        if (t.is_floating_point() or t.is_complex()) and t.numel():
            key = (entry["crc"], entry["dtype"], tuple(t.shape))
            known = _NORM_SKETCH.get(key)
            if known is None:
                wide = torch.float64 if t.dtype in (torch.float64, torch.complex128) else torch.float32
                v = torch.view_as_real(t) if t.is_complex() else t
                known = (float(torch.linalg.vector_norm(v.to(wide))), encode(sketch(t)))
                if len(_NORM_SKETCH) >= _NORM_SKETCH_MAX:
                    _NORM_SKETCH.clear()
                _NORM_SKETCH[key] = known
            entry["norm"], entry["sketch"] = known
        table[name] = entry
    return table


# Norm and sketch of weights already seen in this process, by (CRC32, dtype, shape): a
# model dumped again with unchanged weights (every batch of a calibration set, repeated
# dumps of an inference model) pays one CRC pass per weight instead of four passes more.
# The CRC is what the digest itself trusts to tell weights apart.
_NORM_SKETCH: dict[tuple[object, object, tuple[int, ...]], tuple[float, str | None]] = {}
_NORM_SKETCH_MAX = 8192


def digest_of(table: dict[str, dict[str, Any]]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name, e in table.items():
        h.update(f"{name}|torch.{e['dtype']}|{tuple(e['shape'])}|{e['crc']}|".encode())
    return "blake2b-crc32:" + h.hexdigest()


def weights_digest(model: Any) -> str:
    return digest_of(weight_table(model))


class BackgroundDigest:
    """Compute :func:`weight_table` on a thread while the model runs (CRC32 and torch ops
    release the GIL). ``result()`` joins it and says whether any weight changed meanwhile.
    Buffers (small, and updated in place by the forward itself, e.g. BatchNorm's running
    stats) are read here, before the run starts, so what is recorded never depends on how
    the thread and the forward interleave."""

    def __init__(self, model: Any) -> None:
        import threading

        self._model = model
        self._versions = _versions(model)  # before the thread starts: what the run sees
        self._buffers = weight_table(model, buffers=True)
        self._value: dict | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="weights-digest", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = weight_table(self._model, buffers=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised in result()
            self._error = exc

    def result(self) -> tuple[dict, bool]:
        """``(table, stable)``; stable is False when weights were modified in place (a
        BatchNorm's running stats in train mode, an optimizer step): those entries are
        marked ``changed`` (read while they changed, so not compared)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        merged = {**(self._value or {}), **self._buffers}
        now = _versions(self._model)
        order = list(self._model.state_dict(keep_vars=True))  # the digest's order
        table = {n: merged[n] for n in order if n in merged}
        changed = [n for n, v in now.items() if self._versions.get(n) != v]
        # Kernels update BatchNorm's running stats without bumping their version: buffers
        # (small) are checked by their bytes.
        changed += [
            n for n, b in self._model.named_buffers() if n in table and f"{crc32(b):08x}" != table[n]["crc"]
        ]
        for name in changed:
            if name in table:
                table[name]["changed"] = True
        return table, not changed


def _versions(model: Any) -> dict[str, int]:
    return {n: t._version for n, t in model.state_dict(keep_vars=True).items() if hasattr(t, "_version")}
