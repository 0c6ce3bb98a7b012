"""Shapes the exporter left out, filled in before the rules run.

torch.onnx's TorchScript exporter (``dynamo=False``) writes the graph's inputs and outputs with
their shapes but no ``value_info`` for the values in between, so a rule that needs static
shapes (Einsum, STFT) saw none even when every shape is static. ONNX shape inference (with
data propagation, in a budgeted child: ``onnx_census.infer``) recovers them; each value the
model leaves without a type or shape takes the inferred one. Nothing the model declares is
overridden, and values inference could not type stay as they were.

Inference cannot see through a chain of small constants computed by nodes (torch.stft's
reflect padding exports its pads as Constant -> Slice -> Transpose -> Reshape -> Cast), so
on the copy it infers, such chains are evaluated first (onnx's reference evaluator, inputs
and results of at most FOLD_ELEMENTS elements) and become initializers.
"""

from __future__ import annotations

FOLD_ELEMENTS = 4096  # a constant chain folded for inference: pads, axes, shapes
_NO_FOLD = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "If",
    "Loop",
    "Scan",
    "SequenceConstruct",
}


def _small_constants(proto) -> dict:
    """name -> numpy value of the small initializers and Constant outputs."""
    from onnx import numpy_helper

    out = {}
    for t in proto.graph.initializer:
        if t.data_location != 1 and _count(t.dims) <= FOLD_ELEMENTS:
            out[t.name] = numpy_helper.to_array(t)
    for node in proto.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for attr in node.attribute:
                if attr.name == "value" and _count(attr.t.dims) <= FOLD_ELEMENTS:
                    out[node.output[0]] = numpy_helper.to_array(attr.t)
    return out


def _count(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _light_copy(proto):
    """``proto`` without the data of its large initializers (their names, types and dims
    stay: all inference reads), so a model's weights are never copied."""
    import onnx

    out = onnx.ModelProto(ir_version=proto.ir_version)
    out.opset_import.extend(proto.opset_import)
    out.functions.extend(proto.functions)
    g, src = out.graph, proto.graph
    g.name = src.name
    for field in ("node", "input", "output", "value_info"):
        getattr(g, field).extend(getattr(src, field))
    for t in src.initializer:
        if t.data_location != 1 and _count(t.dims) <= FOLD_ELEMENTS:
            g.initializer.append(t)
        else:
            light = g.initializer.add()
            light.name, light.data_type = t.name, t.data_type
            light.dims.extend(t.dims)
    return out


def folded(proto):
    """A copy of ``proto`` whose nodes computing small constants from small constants are
    replaced by initializers holding their values (for inference only)."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    values = _small_constants(proto)
    out = _light_copy(proto)
    keep, added = [], []
    for node in out.graph.node:
        ins = [i for i in node.input if i]
        if (
            node.op_type == "Constant"
            or node.domain not in ("", "ai.onnx")
            or node.op_type in _NO_FOLD
            or not ins
            or not all(i in values for i in ins)
        ):
            keep.append(node)
            continue
        try:
            model = helper.make_model(
                helper.make_graph(
                    [node],
                    "fold",
                    [helper.make_tensor_value_info(i, 0, None) for i in ins],
                    [helper.make_tensor_value_info(o, 0, None) for o in node.output],
                ),
                opset_imports=out.opset_import,
            )
            results = ReferenceEvaluator(model).run(None, {i: values[i] for i in ins})
        except Exception:  # noqa: BLE001 - folding is best effort: the node stays
            keep.append(node)
            continue
        if any(getattr(r, "size", FOLD_ELEMENTS + 1) > FOLD_ELEMENTS for r in results):
            keep.append(node)
            continue
        for name, value in zip(node.output, results, strict=False):
            values[name] = value
            added.append(numpy_helper.from_array(value, name))
    used = {i for n in keep for i in n.input} | {o.name for o in out.graph.output}
    for n in keep:  # subgraphs read outer values too
        for attr in n.attribute:
            for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                used |= {i for sub in g.node for i in sub.input}
    # Constants only the folded nodes read go (Slice's INT64_MAX end would stop data propagation)
    keep = [n for n in keep if n.op_type != "Constant" or any(o in used for o in n.output)]
    del out.graph.node[:]
    out.graph.node.extend(keep)
    out.graph.initializer.extend(added)
    return out


def _inferred(proto) -> dict[str, tuple[int, tuple]]:
    """name -> (ONNX elem_type, dims: int, str or None each) of every typed tensor value."""
    from migrate.ops.onnx_census import infer

    inferred, _note = infer(folded(proto))
    graph = inferred.graph  # type: ignore[attr-defined]
    out: dict[str, tuple[int, tuple]] = {}
    for vi in [*graph.value_info, *graph.output, *graph.input]:
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim)
        out[vi.name] = (tt.elem_type, dims)
    return out


def fill_shapes(model, proto) -> int:
    """Give each value of ``model``'s main graph (an onnx_ir Model) that has no shape the
    shape ONNX inference finds for it (and its type where it has none); the number filled."""
    import onnx_ir as ir

    if all(v is None or v.shape is not None for node in model.graph for v in node.outputs):
        return 0  # every value has its shape: nothing to infer
    known = _inferred(proto)
    filled = 0
    values = [v for node in model.graph for v in node.outputs]
    for value in values:
        if value is None or not value.name or value.name not in known:
            continue
        elem, dims = known[value.name]
        if value.dtype is None and elem:
            value.dtype = ir.DataType(elem)
        if value.shape is None:
            value.shape = ir.Shape(list(dims))
            filled += 1
    return filled
