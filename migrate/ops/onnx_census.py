"""Op census of an ONNX model against Ascend's ATC converter (or onnxruntime's CANN EP).

Walks the main graph and every subgraph (If/Loop/Scan bodies), judges each node by the
model's default-domain opset, the node's input dtype where the graph records it, and the
documented attribute limits; groups the verdicts per op. Weights are never loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.ops.onnx_limits import NodeView
from migrate.ops.onnx_limits import check as check_limits
from migrate.ops.onnx_load import default_opset, load_graph
from migrate.ops.registry import (
    DEFAULT_DOMAINS,
    SUPPORTED,
    UNSUPPORTED,
    Verdict,
    load_aten,
    load_onnx,
)


def walk(graph, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(node path, node) for every node, depth first into subgraph attributes."""
    for i, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{i}"
        path = f"{prefix}{name}"
        yield path, node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from walk(attr.g, f"{path}/{attr.name}/")
            for j, sub in enumerate(attr.graphs):
                yield from walk(sub, f"{path}/{attr.name}[{j}]/")


INFER_SECONDS = 120.0  # shape inference of real exports takes seconds; a hostile one, forever
DATA_PROP_LIMIT = 1 << 20  # a 1-D tensor data propagation would expand, element by element


def infer(model) -> tuple[object, str | None]:
    """``model`` with inferred value types and shapes (onnx shape inference, data propagation;
    weights are not loaded: initializers carry their dims), or the model as it is and why.

    Inference grows with what the model *declares*: data propagation expands every 1-D
    tensor element by element (a 113-byte model declaring ``float[2^40]`` took all memory).
    So it is skipped when a declared 1-D extent or an integer constant is over
    DATA_PROP_LIMIT, and inference runs in a child with a time and memory budget
    (core/isolate.py): past it the census goes on without it, and says so."""
    import onnx

    from migrate.core.isolate import Bounded, run_bounded

    large = _declares_large(model)
    budget = max(4 << 30, 8 * model.ByteSize())
    why = ""
    for data_prop in (False,) if large else (True, False):
        try:
            data = run_bounded(_infer_bytes, model, data_prop, seconds=INFER_SECONDS, memory=budget)
        except Bounded as exc:
            why = str(exc)
            continue
        out = onnx.ModelProto()
        out.ParseFromString(data)
        note = None
        if large:
            note = (
                f"data propagation skipped: the model declares a 1-D extent or an "
                f"integer constant over {DATA_PROP_LIMIT}"
            )
        elif not data_prop:
            note = f"data propagation stopped ({why})"
        return out, note
    return model, f"shape inference stopped ({why})"


def _infer_bytes(model, data_prop: bool) -> bytes:
    """In the budgeted child: the inferred model, weights dropped (the census needs none)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=data_prop
        )
    except Exception as exc:  # noqa: BLE001 - inference is best effort; say why it stopped
        text = str(exc).strip().splitlines()
        raise RuntimeError(
            f"shape inference failed ({text[0][:160] if text else type(exc).__name__})"
        ) from None
    _drop_weights(inferred.graph)
    return inferred.SerializeToString()


def _drop_weights(graph) -> None:
    for t in graph.initializer:
        for name in (
            "raw_data",
            "float_data",
            "int32_data",
            "int64_data",
            "double_data",
            "uint64_data",
            "string_data",
        ):
            t.ClearField(name)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                _drop_weights(attr.g)
            for sub in attr.graphs:
                _drop_weights(sub)


def _declares_long_vector(graph) -> bool:
    """A graph value declared 1-D with an extent over DATA_PROP_LIMIT."""
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.HasField("shape") and len(tt.shape.dim) == 1:
            d = tt.shape.dim[0]
            if d.HasField("dim_value") and d.dim_value > DATA_PROP_LIMIT:
                return True
    return False


def _declares_large(model) -> bool:
    """A 1-D extent or a small integer constant over DATA_PROP_LIMIT anywhere."""
    from onnx import TensorProto, numpy_helper

    ints = (TensorProto.INT64, TensorProto.INT32, TensorProto.UINT64, TensorProto.UINT32)

    def big_tensor(t) -> bool:
        if len(t.dims) == 1 and t.dims[0] > DATA_PROP_LIMIT:
            return True
        if (
            t.data_type in ints
            and len(t.dims) <= 1
            and (not t.dims or t.dims[0] <= 64)
            and t.data_location != TensorProto.EXTERNAL
        ):
            try:
                values = numpy_helper.to_array(t).reshape(-1)
            except Exception:  # noqa: BLE001 - a malformed tensor: let inference judge it
                return False
            return bool(values.size) and bool((abs(values.astype("float64")) > DATA_PROP_LIMIT).any())
        return False

    def walk(graph) -> bool:
        if _declares_long_vector(graph) or any(big_tensor(t) for t in graph.initializer):
            return True
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("t") and big_tensor(attr.t):
                    return True
                if attr.HasField("g") and walk(attr.g):
                    return True
                if any(walk(sub) for sub in attr.graphs):
                    return True
                if (
                    len(attr.ints)
                    and max(abs(v) for v in attr.ints) > DATA_PROP_LIMIT
                    and node.op_type == "Constant"
                ):
                    return True
        return False

    return walk(model.graph)


def value_info(graph, out: dict | None = None) -> dict[str, tuple[int, int | None, bool]]:
    """Value name -> (ONNX elem type, rank or None, constant?) over all graphs."""
    out = {} if out is None else out
    for t in graph.initializer:
        out[t.name] = (t.data_type, len(t.dims), True)
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.elem_type and vi.name not in out:
            rank = len(tt.shape.dim) if tt.HasField("shape") else None
            out[vi.name] = (tt.elem_type, rank, False)
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS:
            for name in node.output:
                elem, rank, _ = out.get(name, (0, None, True))
                out[name] = (elem, rank, True)
        for attr in node.attribute:
            if attr.HasField("g"):
                value_info(attr.g, out)
            for sub in attr.graphs:
                value_info(sub, out)
    return out


def attr_values(node) -> dict:
    import onnx.helper

    out = {}
    for attr in node.attribute:
        if attr.type in (attr.GRAPH, attr.GRAPHS):
            continue
        out[attr.name] = onnx.helper.get_attribute_value(attr)
    return out


def node_view(node, info: dict) -> NodeView:
    from onnx import TensorProto

    inputs: list[tuple[str | None, int | None, bool] | None] = []
    for name in node.input:
        got = info.get(name) if name else None
        if got is None:
            inputs.append(None if not name else (None, None, False))
            continue
        elem, rank, const = got
        inputs.append((TensorProto.DataType.Name(elem) if elem else None, rank, const))
    return NodeView(node.op_type, node.domain or "ai.onnx", attr_values(node), inputs, list(node.output))


def judge(
    view: NodeView,
    opset: int,
    backend: str,
    target: str | None,
    local_functions: set[tuple[str, str]],
    soc: str | None = None,
) -> Verdict:
    reg = load_onnx(backend, target)
    if (view.domain, view.op_type) in local_functions:
        return Verdict(
            UNSUPPORTED,
            f"model-local function {view.domain}::{view.op_type}: "
            "inline it first (onnx.inliner.inline_local_functions)",
        )
    dtype = view.inputs[0][0] if view.inputs and view.inputs[0] else None
    verdict = reg.lookup(view.op_type, view.domain, opset, dtype, soc=soc)
    if verdict.status == SUPPORTED and backend == "atc":
        limited = check_limits(view)
        return verdict if limited is None else limited
    return verdict


def census(
    path: Path,
    backend: str = "atc",
    target: str | None = None,
    model=None,
    judge_opset: int | None = None,
    soc: str | None = None,
) -> dict:
    """The op coverage report (docs/contracts.md §4) of the ONNX file at ``path``; ``judge_opset``
    judges the nodes as if the model declared that opset (what lowering would give)."""
    model = model if model is not None else load_graph(path)
    opset = default_opset(model)
    reg = load_onnx(backend, target)
    if soc is not None:
        if backend != "atc":
            raise UsageError("--soc applies to --backend atc (the CANN EP data has no chips)")
        reg.check_soc(soc)
    model, inference_note = infer(model)
    info = value_info(model.graph)
    funcs = {(f.domain, f.name) for f in model.functions}
    rows: dict[tuple, dict] = {}
    order: list[tuple] = []
    total = 0
    for node_path, node in walk(model.graph):
        total += 1
        view = node_view(node, info)
        dtype = view.inputs[0][0] if view.inputs and view.inputs[0] else None
        verdict = judge(view, judge_opset or opset, backend, target, funcs, soc)
        domain = node.domain or "ai.onnx"
        key = (domain, node.op_type, verdict.status, verdict.reason)
        row = rows.get(key)
        if row is None:
            row = rows[key] = verdict.row(node.op_type, domain)
            order.append(key)
        row["count"] += 1
        row["nodes"].append(node_path)
        if dtype and dtype not in row["dtypes"]:
            row["dtypes"].append(dtype)
    ops = [rows[k] for k in order]
    _attach_decompositions(ops)
    report = _report(path, model, opset, backend, target, ops, total)
    report["soc"] = soc
    report["judged_for"] = judged_for(reg, soc)
    if inference_note:
        report["advice"].append(inference_note + "; dtypes are judged only where the file records them")
    return report


def judged_for(reg, soc: str | None) -> str:
    """The chip(s) the verdicts hold for: ``--soc``, or the stated default."""
    if soc:
        return soc
    if reg.backend != "atc":
        return "the CANN EP (its data has no per-chip kernels)"
    return (
        f"any chip of the data ({', '.join(reg.socs())}; default: a dtype passes when one "
        "chip's kernel takes it; --soc CHIP judges for one)"
    )


def _attach_decompositions(ops: list[dict]) -> None:
    from migrate.ops.decompositions import decomposition_for

    for row in ops:
        if row["status"] != SUPPORTED:
            row["decomposition"] = decomposition_for(row["op"], row["domain"])


def _report(path, model, opset, backend, target, ops, total) -> dict:
    reg = load_onnx(backend, target)
    summary = {s: 0 for s in ("supported", "unsupported", "restricted", "cpu-fallback")}
    nodes = dict(summary)
    for row in ops:
        summary[row["status"]] += 1
        nodes[row["status"]] += row["count"]
    advice = []
    if opset > reg.max_opset:
        advice.append(
            f"model opset {opset} is above {reg.max_opset}, the last opset "
            f"{'ATC' if backend == 'atc' else 'the CANN EP graph mode'} registers: "
            f"re-export with torch.onnx.export(..., opset_version={reg.max_opset}) "
            "or run `migrate decompose`"
        )
    custom = sorted({r["domain"] for r in ops if r["domain"] not in ("ai.onnx",)})
    if custom:
        advice.append(f"custom domains: {', '.join(custom)}")
    from migrate.ops.versions import torch_versions

    return {
        "model": str(path),
        "opset": opset,
        "backend": backend,
        "target": reg.version,
        "torch": torch_versions(load_aten(None)),
        "nodes": total,
        "ops": ops,
        "summary": {**summary, "ops": len(ops), "nodes": nodes},
        "custom_domains": custom,
        "advice": advice,
    }
