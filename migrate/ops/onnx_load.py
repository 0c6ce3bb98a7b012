"""Load an ONNX model's graph without its weights, or say clearly why it cannot be read."""

from __future__ import annotations

from pathlib import Path

from migrate.core.errors import UsageError


def load_graph(path: Path):
    """The ModelProto of ``path`` with external tensors left on disk (checked to exist)."""
    import onnx
    from google.protobuf.message import DecodeError

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError) as exc:
        raise UsageError(f"{path}: not a readable ONNX model ({_short(exc)})") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise UsageError(f"{path}: a protobuf but not an ONNX model (no graph or opset_import)")
    check_external_data(model, path.parent, path)
    return model


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def _external_tensors(model):
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    return [t for t in _get_all_tensors(model) if uses_external_data(t)]


def check_external_data(model, base: Path, path: Path) -> None:
    """Every external tensor's file exists and is long enough (stat only, nothing read)."""
    folder = base.resolve()
    for tensor in _external_tensors(model):
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        target = (base / location).resolve()
        if location and (Path(location).is_absolute() or not target.is_relative_to(folder)):
            raise UsageError(f"{path}: external data {location!r} of tensor {tensor.name!r} "
                             "leaves the model's folder; refusing to read it")
        if not location or not target.is_file():
            raise UsageError(f"{path}: external data {location!r} of tensor {tensor.name!r} "
                             f"is missing (looked in {base})")
        end = int(info.get("offset", 0) or 0) + int(info.get("length", 0) or 0)
        if end > target.stat().st_size:
            raise UsageError(f"{path}: external data file {location!r} is truncated "
                             f"(tensor {tensor.name!r} needs {end} bytes)")


def default_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 0
