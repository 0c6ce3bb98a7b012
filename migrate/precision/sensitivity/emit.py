"""What a user applies: the units to keep in high precision, written where Ascend decides
precision.

* ``keep_dtype.cfg`` for ATC ``--keep_dtype``: one original-model node name per line (the
  ONNX nodes of the kept modules), or ``OpType::<Ascend IR type>`` for kept op kinds;
* ``modify_mixlist.json`` for ATC ``--modify_mixlist`` (with ``--precision_mode
  allow_mix_precision*`` or ``--precision_mode_v2 mixed_*``): the Ascend IR op types of
  the kept nodes under ``black-list.to-add`` (a type-level list: it keeps every node of
  those types);
* ``autocast_exclude.py``: the kept module names and a helper that runs them outside
  autocast in fp32;
* ``quant_skip.txt``: the kept module names, one per line, for quantization tools.

Formats: CANN ATC parameter reference, ``--keep_dtype`` (atlasatcparam_16_0074) and
``--modify_mixlist`` (atlasatcparam_16_0071); see docs/precision.md §6.
ONNX op types map to the Ascend IR types ATC converts them to through the op registry
(op_registry/onnx/atc: each plugin's ``ge_op``); an op ATC builds as a subgraph
(``PartitionedCall``) has no single type and is kept by node name only.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from migrate.core.outputs import write_output

SNIPPET = '''"""Modules measured as sensitive to {fmt} by `migrate sensitivity` ({model}): run them
outside autocast, in float32. Usage: exclude_from_autocast(model) once, after building it."""

import torch

KEEP_FP32 = {names}


def exclude_from_autocast(model, names=KEEP_FP32):
    for name in names:
        module = model.get_submodule(name)
        forward = module.forward

        def wrapped(*args, _forward=forward, **kwargs):
            device = next(module.parameters()).device.type
            with torch.autocast(device_type=device, enabled=False):
                args = [a.float() if torch.is_tensor(a) and a.is_floating_point() else a
                        for a in args]
                return _forward(*args, **kwargs)

        module.forward = wrapped
    return model
'''


def onnx_nodes(model: Any, batch: tuple[tuple, dict], path: Path) -> tuple[list, str | None]:
    """Export ``model`` (TorchScript exporter, opset 18: node names follow module paths)
    to ``path``; ``([(name, op_type)], None)`` or ``([], why not)``."""
    import torch

    args, kwargs = batch
    try:
        import onnx

        buf = io.BytesIO()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                tuple(args),
                buf,  # type: ignore[arg-type]  # a file object is accepted
                kwargs=kwargs or None,
                dynamo=False,
                opset_version=18,
            )
        write_output(path, buf.getvalue(), "--keep-out")
        graph = onnx.load_from_string(buf.getvalue()).graph
    except Exception as exc:  # noqa: BLE001 - the exporter raises many types
        return [], f"ONNX export failed: {' '.join(str(exc).split())[:200]}"
    return [(n.name, n.op_type) for n in graph.node], None


def nodes_of(module: str, nodes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    prefix = "." + module + "."
    return [
        (n, t)
        for n, t in nodes
        if n.replace("/", ".").startswith(prefix) and t not in ("Constant", "Identity")
    ]


def ascend_types(onnx_types: set[str]) -> tuple[list[str], list[str]]:
    """(Ascend IR op types, ONNX types that ATC builds as subgraphs) from the registry."""
    from migrate.ops.registry import load_onnx

    reg = load_onnx("atc")
    found, sub = set(), set()
    for op in onnx_types:
        row = reg.ops.get(op) or {}
        ge = [g for g in row.get("ge_op") or [] if g != "PartitionedCall"]
        if ge:
            found.update(ge)
        else:
            sub.add(op)
    return sorted(found), sorted(sub)


def write_outputs(
    out: Path,
    keep: list[dict],
    nodes: list[tuple[str, str]],
    fmt_label: str,
    model_name: str,
    op_types: dict[str, str],
) -> dict:
    """Write the four files; return what was written (for the JSON report)."""
    out.mkdir(parents=True, exist_ok=True)
    modules = sorted({m for u in keep for m in u["modules"]})
    keep_nodes = [n for m in modules for n in nodes_of(m, nodes)]
    onnx_types = {t for _, t in keep_nodes} | {
        op_types[u["name"]] for u in keep if u["kind"] == "op" and u["name"] in op_types
    }
    ge, subgraphs = ascend_types(onnx_types)
    op_lines = [
        f"OpType::{t}"
        for t in ascend_types(
            {op_types[u["name"]] for u in keep if u["kind"] == "op" and u["name"] in op_types}
        )[0]
    ]
    mixlist = {"black-list": {"to-add": ge}}
    files = {
        "keep_dtype.cfg": "".join(f"{n}\n" for n, _ in keep_nodes)
        + "".join(f"{line}\n" for line in op_lines),
        "modify_mixlist.json": json.dumps(mixlist, indent=2) + "\n",
        "autocast_exclude.py": SNIPPET.format(
            fmt=fmt_label, model=model_name, names=json.dumps(modules, indent=4)
        ),
        "quant_skip.txt": "".join(f"{m}\n" for m in modules),
    }
    for name, text in files.items():  # a link planted at a name is replaced, never followed
        write_output(out / name, text.encode("utf-8"), "--keep-out")
    return {
        "dir": str(out),
        "keep_dtype": "keep_dtype.cfg",
        "modify_mixlist": "modify_mixlist.json",
        "autocast": "autocast_exclude.py",
        "quant_skip": "quant_skip.txt",
        "onnx_nodes": len(keep_nodes),
        "ascend_types": ge,
        "subgraph_types_kept_by_name": subgraphs,
    }
