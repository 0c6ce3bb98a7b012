"""Run two ONNX models with onnxruntime on the same inputs; max abs error per output."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import input_path


@dataclass
class Verification:
    atol: float
    outputs: list[dict] = field(default_factory=list)
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and all(o["max_abs_error"] <= self.atol for o in self.outputs)

    def __bool__(self) -> bool:
        return self.passed

    def to_json(self) -> dict:
        return {
            "atol": self.atol,
            "passed": self.passed,
            "outputs": self.outputs,
            "error": self.error or None,
        }


def _session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


MAX_RANDOM_ELEMENTS = 1 << 26  # random feeds for a verification run (256 MB of float32)
MAX_INPUT_BYTES = 2 * 1024**3  # an --inputs .npz, uncompressed


def random_inputs(session, seed: int = 0) -> dict:
    """Random feeds from the session's input metadata; symbolic dims become 2. A model that
    declares more than MAX_RANDOM_ELEMENTS input elements is not fed at random (ValueError:
    the verification says why)."""
    import math

    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    shapes = {
        m.name: [d if isinstance(d, int) and d >= 0 else 2 for d in m.shape] for m in session.get_inputs()
    }
    total = sum(math.prod(s) for s in shapes.values())
    if total > MAX_RANDOM_ELEMENTS:
        raise ValueError(
            f"the inputs declare {total} elements (limit {MAX_RANDOM_ELEMENTS} for "
            "random inputs); pass --inputs FILE.npz or --no-verify"
        )
    for meta in session.get_inputs():
        shape = shapes[meta.name]
        kind = meta.type[len("tensor(") : -1] if meta.type.startswith("tensor(") else meta.type
        if kind in ("float", "double", "float16"):
            dtype = {"float": np.float32, "double": np.float64, "float16": np.float16}[kind]
            feeds[meta.name] = np.asarray(rng.standard_normal(shape), dtype=dtype)
        elif kind == "bool":
            feeds[meta.name] = np.asarray(rng.random(shape) < 0.5)
        elif kind.startswith(("int", "uint")):
            feeds[meta.name] = np.asarray(rng.integers(1, 4, size=shape), dtype=np.dtype(kind))
        else:
            raise UsageError(
                f"cannot make random input {meta.name!r} of type {meta.type}; pass --inputs FILE.npz"
            )
    return feeds


def load_inputs(path: Path) -> dict:
    """The arrays of an .npz file: a regular file, no pickles, at most MAX_INPUT_BYTES once
    decompressed (sizes from the archive, checked before anything is inflated)."""
    import zipfile

    import numpy as np

    path = input_path(path, "--inputs", MAX_INPUT_BYTES)
    shown = escape(str(path))
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise ValueError("a single array, not an .npz archive")
            size = sum(info.file_size for info in data.zip.infolist())
            if size > MAX_INPUT_BYTES:
                raise ValueError(f"{size} bytes once decompressed (limit {MAX_INPUT_BYTES})")
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise UsageError(
            f"--inputs {shown}: not a readable .npz file ({escape(str(exc).strip()[:200])})"
        ) from None


def compare(
    reference: Path, candidate: Path, atol: float, inputs: dict | None = None, seed: int = 0
) -> Verification:
    import numpy as np

    result = Verification(atol)
    try:
        ref, cand = _session(reference), _session(candidate)
        feeds = inputs if inputs is not None else random_inputs(ref, seed)
        want = ref.run(None, feeds)
        got = cand.run(None, feeds)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises many types; report as data
        result.error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
        return result
    for meta, a, b in zip(ref.get_outputs(), want, got, strict=True):
        a = np.asarray(a).astype(np.float64)
        b = np.asarray(b).astype(np.float64)
        if a.shape != b.shape:
            err = float("inf")
        elif a.size == 0:
            err = 0.0
        else:
            diff = np.abs(a - b)
            err = float(np.nanmax(diff)) if not np.isnan(diff).all() else 0.0
            if (np.isnan(a) != np.isnan(b)).any():
                err = float("inf")
        result.outputs.append({"name": meta.name, "max_abs_error": err, "shape": list(a.shape)})
    return result
