"""Op census of an ONNX model against Ascend's ATC converter (or onnxruntime's CANN EP).

Walks the main graph and every subgraph (If/Loop/Scan bodies), judges each node by the
model's default-domain opset, the node's input dtype where the graph records it, and the
documented attribute limits; groups the verdicts per op. Weights are never loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

from migrate.ops.onnx_load import default_opset, load_graph
from migrate.ops.registry import (
    DEFAULT_DOMAINS,
    RESTRICTED,
    SUPPORTED,
    UNSUPPORTED,
    Verdict,
    load_onnx,
    load_yaml,
)
from migrate.core.resources import op_registry_dir


@cache
def attribute_limits() -> dict:
    return load_yaml(op_registry_dir() / "onnx" / "atc" / "attribute_limits.yaml")


def walk(graph, prefix: str = "") -> Iterator[tuple[str, object]]:
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


def type_map(graph, out: dict | None = None) -> dict[str, int]:
    """Value name -> ONNX elem type, from inputs, initializers and value_info (all graphs)."""
    out = {} if out is None else out
    for t in graph.initializer:
        out[t.name] = t.data_type
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out[vi.name] = vi.type.tensor_type.elem_type
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                type_map(attr.g, out)
            for sub in attr.graphs:
                type_map(sub, out)
    return out


def attr_value(node, name: str):
    for attr in node.attribute:
        if attr.name == name:
            if attr.type == attr.STRING:
                return attr.s.decode("utf-8", "replace")
            if attr.type == attr.INT:
                return attr.i
            if attr.type == attr.FLOAT:
                return attr.f
    return None


def check_limits(node) -> Verdict | None:
    """A `restricted` verdict when the node breaks a documented attribute limit."""
    limit = attribute_limits().get(node.op_type)
    if not limit or node.domain not in DEFAULT_DOMAINS:
        return None
    value = attr_value(node, limit["attribute"])
    value = limit.get("default") if value is None else value
    if isinstance(value, str):
        value = value.replace(" ", "")
    if value in limit["allowed"]:
        return None
    return Verdict(RESTRICTED, f"{limit['attribute']}={value!r}: {limit['why']}")


def judge(node, opset: int, dtype: str | None, backend: str, target: str | None,
          local_functions: set[tuple[str, str]]) -> Verdict:
    reg = load_onnx(backend, target)
    if (node.domain, node.op_type) in local_functions:
        return Verdict(UNSUPPORTED, f"model-local function {node.domain}::{node.op_type}: "
                                    "inline it first (onnx.inliner.inline_local_functions)")
    verdict = reg.lookup(node.op_type, node.domain, opset, dtype)
    if verdict.status == SUPPORTED and backend == "atc":
        limited = check_limits(node)
        return verdict if limited is None else limited
    return verdict


def census(path: Path, backend: str = "atc", target: str | None = None,
           model=None, judge_opset: int | None = None) -> dict:
    """The op coverage report (docs/contracts.md §4) of the ONNX file at ``path``; ``judge_opset``
    judges the nodes as if the model declared that opset (what lowering would give)."""
    from onnx import TensorProto

    model = model if model is not None else load_graph(path)
    opset = default_opset(model)
    types = type_map(model.graph)
    funcs = {(f.domain, f.name) for f in model.functions}
    rows: dict[tuple, dict] = {}
    order: list[tuple] = []
    total = 0
    for node_path, node in walk(model.graph):
        total += 1
        elem = types.get(node.input[0]) if len(node.input) and node.input[0] else None
        dtype = TensorProto.DataType.Name(elem) if elem else None
        verdict = judge(node, judge_opset or opset, dtype, backend, target, funcs)
        domain = node.domain or "ai.onnx"
        key = (domain, node.op_type, verdict.status, verdict.reason)
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"op": node.op_type, "domain": domain, "count": 0, "nodes": [],
                               "status": verdict.status, "reason": verdict.reason,
                               "decomposition": None, "dtypes": []}
            order.append(key)
        row["count"] += 1
        row["nodes"].append(node_path)
        if dtype and dtype not in row["dtypes"]:
            row["dtypes"].append(dtype)
    ops = [rows[k] for k in order]
    _attach_decompositions(ops)
    return _report(path, model, opset, backend, target, ops, total)


def _attach_decompositions(ops: list[dict]) -> None:
    from migrate.ops.decompose.registry import decomposition_for

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
        advice.append(f"model opset {opset} is above {reg.max_opset}, the last opset "
                      f"{'ATC' if backend == 'atc' else 'the CANN EP graph mode'} registers: "
                      f"re-export with torch.onnx.export(..., opset_version={reg.max_opset}) "
                      "or run `migrate decompose`")
    custom = sorted({r["domain"] for r in ops if r["domain"] not in ("ai.onnx",)})
    if custom:
        advice.append(f"custom domains: {', '.join(custom)}")
    return {"model": str(path), "opset": opset, "backend": backend, "target": reg.version,
            "nodes": total, "ops": ops, "summary": {**summary, "ops": len(ops), "nodes": nodes},
            "custom_domains": custom, "advice": advice}
