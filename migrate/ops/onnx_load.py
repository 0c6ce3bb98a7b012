"""Load an ONNX model's graph without its weights, or say clearly why it cannot be read.

A model is untrusted input: it is read as a bounded regular file (never a FIFO or a
device, never more than protobuf's 2 GiB), and every external-data entry is checked as data
before anything opens it: a location inside the model's folder that names a regular file,
offsets and lengths written as decimal integers, the file long enough for them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import read_input

MAX_MODEL_BYTES = 2 * 1024**3  # protobuf's own limit for one message
_MAX_DIGITS = 19  # an int64 offset or length
MAX_OPSET = 1 << 16


def load_graph(path: Path):
    """The ModelProto of ``path`` with external tensors left on disk (checked to exist)."""
    import onnx
    from google.protobuf.message import DecodeError

    path = Path(path)
    data = read_input(path, "model", MAX_MODEL_BYTES)
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeError, ValueError, OSError) as exc:
        raise UsageError(f"{escape(str(path))}: not a readable ONNX model ({_short(exc)})") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise UsageError(f"{escape(str(path))}: a protobuf but not an ONNX model (no graph or opset_import)")
    for imp in model.opset_import:  # onnx's schema lookups take a C int
        if not 0 <= imp.version <= MAX_OPSET:
            raise UsageError(
                f"{escape(str(path))}: opset {imp.version} of domain "
                f"{escape(repr(imp.domain))[:60]} is out of range (0..{MAX_OPSET})"
            )
    check_external_data(model, path.parent, path)
    return model


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return escape(text[0] if text else type(exc).__name__)[:160]


def _external_tensors(model):
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    return [t for t in _get_all_tensors(model) if uses_external_data(t)]


def _count(info: dict, key: str, where: str) -> int:
    value = info.get(key, "")
    if value == "":
        return 0
    if not (value.isascii() and value.isdigit() and len(value) <= _MAX_DIGITS):
        raise UsageError(
            f"{where}: external-data {key} {escape(repr(value))[:60]} is not a non-negative integer"
        )
    return int(value)


def external_files(model, base: Path, path: Path) -> list[Path]:
    """The external-data files of ``model`` (each checked, see check_external_data)."""
    return check_external_data(model, base, path)


def check_external_data(model, base: Path, path: Path) -> list[Path]:
    """Every external tensor's file is a regular file inside ``base`` and long enough for
    its offset and length (stat only, nothing read); the files, once each."""
    folder = os.path.realpath(base)
    shown = escape(str(path))
    files: dict[str, Path] = {}
    for tensor in _external_tensors(model):
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        name = escape(repr(tensor.name))[:80]
        where = f"{shown}: tensor {name}"
        if not location or "\x00" in location or Path(location).is_absolute():
            raise UsageError(
                f"{where}: external-data location {escape(repr(location))[:80]} "
                "is not a file name relative to the model's folder"
            )
        target = os.path.realpath(os.path.join(base, location))
        if not target.startswith(folder.rstrip(os.sep) + os.sep):
            raise UsageError(
                f"{where}: external data {escape(repr(location))[:80]} leaves the "
                "model's folder; refusing to read it"
            )
        try:
            st = os.stat(target)
        except OSError:
            raise UsageError(
                f"{where}: external data {escape(repr(location))[:80]} is missing "
                f"(looked in {escape(str(base))})"
            ) from None
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{where}: external data {escape(repr(location))[:80]} is not a regular file")
        end = _count(info, "offset", where) + _count(info, "length", where)
        if end > st.st_size:
            raise UsageError(
                f"{where}: external data file {escape(repr(location))[:80]} is "
                f"truncated (it needs {end} bytes)"
            )
        files.setdefault(target, Path(target))
    return list(files.values())


def default_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 0
