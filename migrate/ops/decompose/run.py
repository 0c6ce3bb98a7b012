"""`migrate decompose`: load, rewrite, lower, save, re-census, verify with onnxruntime."""

from __future__ import annotations

from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import input_path
from migrate.core.outputs import check_output
from migrate.ops.onnx_load import MAX_MODEL_BYTES, external_files, load_graph
from migrate.ops.registry import SUPPORTED, load_aten
from migrate.ops.versions import torch_versions


def _load_ir(path: Path, proto):
    import onnx_ir as ir

    uses_external = any(t.data_location == 1 for t in proto.graph.initializer)
    try:
        return ir.load(str(path)), uses_external
    except Exception as exc:  # noqa: BLE001 - any reader failure is bad input
        raise UsageError(
            f"{escape(str(path))}: cannot read the model ({escape(str(exc).strip()[:200])})"
        ) from None


def check_paths(src: Path, out: Path, inputs: Path | None, report: Path | None):
    """Before any work: the model loads (its external data checked), and no output is an
    input or a file an input depends on (the model, its external data, the --inputs file;
    the report is not the output either, nor the output's weights file). The ModelProto."""
    proto = load_graph(src)  # clear errors for bad files and missing external data
    read = [src, *external_files(proto, src.parent, src)]
    if inputs is not None:
        read.append(input_path(inputs, "--inputs", MAX_MODEL_BYTES))
    check_output(out, "-o", read)
    check_output(out.parent / (out.name + ".data"), f"-o {escape(str(out))} (its weights file)", read)
    check_output(report, "--report", [*read, out, out.parent / (out.name + ".data")])
    return proto


def _save(model, out: Path, external: bool) -> None:
    import onnx_ir as ir

    out.parent.mkdir(parents=True, exist_ok=True)
    if external:
        ir.save(model, str(out), external_data=out.name + ".data")
    else:
        ir.save(model, str(out))


def _check(path: Path) -> str | None:
    """onnx.checker's full check (with shape inference) of the written file, or why it fails."""
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as exc:  # noqa: BLE001 - any checker failure means: do not keep the file
        text = str(exc).strip().splitlines()
        return f"onnx.checker: {text[0][:300] if text else type(exc).__name__}"
    return None


def _publish(tmp: Path, out: Path) -> None:
    """Move the checked files from the temp folder to their final names."""
    import os

    for item in sorted(tmp.iterdir()):
        os.replace(item, out.parent / item.name)


def run_decompose(
    src: Path,
    out: Path,
    backend: str = "atc",
    target: str | None = None,
    atol: float = 1e-5,
    inputs: Path | None = None,
    force: set[str] | None = None,
    verify: bool = True,
    report: Path | None = None,
) -> tuple[dict, int]:
    from migrate.ops.decompose.passes import decompose_model
    from migrate.ops.onnx_census import census
    from migrate.ops.verify import compare, load_inputs

    proto = check_paths(Path(src), Path(out), inputs, report)
    feeds = load_inputs(inputs) if inputs else None
    import shutil
    import tempfile

    model, external = _load_ir(src, proto)
    from migrate.ops.decompose.domains import valid_feeds
    from migrate.ops.decompose.shapes import fill_shapes

    fill_shapes(model, proto)  # a TorchScript export names no shapes between its nodes
    if feeds is None and verify:
        feeds = valid_feeds(model)  # random, but indices within what they index
    log = decompose_model(model, backend, target, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        return _verify_and_publish(
            src, out, tmp, model, external, log, backend, target, atol, feeds, verify, census, compare
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _verify_and_publish(
    src, out, tmp, model, external, log, backend, target, atol, feeds, verify, census, compare
) -> tuple[dict, int]:
    """Write to ``tmp``, check and verify there; move to ``out`` only when verified."""
    staged = tmp / out.name
    _save(model, staged, external)
    problem = _check(staged)
    after = census(staged, backend, target)
    remaining = [r for r in after["ops"] if r["status"] != SUPPORTED]
    report = {
        "model": str(src),
        "output": str(out),
        "backend": backend,
        "opset": {"from": log.opset_from, "to": log.opset_to},
        "rewrites": log.rewrites,
        "declined": log.declined,
        "lowering_blockers": log.lowering_blockers,
        "remaining": [{k: r[k] for k in ("op", "domain", "count", "status", "reason")} for r in remaining],
        "verification": None,
        "torch": torch_versions(load_aten(None)),
    }
    verified = problem is None
    if verify and verified:
        check = compare(src, staged, atol, feeds)
        report["verification"] = check.to_json()
        verified = check.passed
    report["check"] = problem
    report["written"] = verified
    if verified:
        _publish(tmp, out)
    ok = verified and not remaining
    report["passed"] = ok
    return report, 0 if ok else 1
