"""What a user applies: the units to keep in high precision, written where Ascend decides
precision.

* ``keep_dtype.cfg`` for ATC ``--keep_dtype``: one node name per line, the nodes each kept
  unit made in this model's ONNX graph (onnx_graph.py: a module's scope, an op's calls),
  so every line names a node of ``model.onnx`` (or of ``--onnx FILE``);
* ``modify_mixlist.json`` for ATC ``--modify_mixlist`` (with ``--precision_mode
  allow_mix_precision*`` or ``--precision_mode_v2 mixed_*``): the Ascend IR op types of
  the kept nodes under ``black-list.to-add`` (a type-level list: it keeps every node of
  those types);
* ``autocast_exclude.py`` (autocast_file.py): the kept module names, or for op units the
  kept op names, and ``exclude_from_autocast(model)``, which runs them outside autocast in
  fp32;
* ``quant_skip.txt``: the kept module names, one per line, for quantization tools.

Formats: CANN ATC parameter reference, ``--keep_dtype`` (atlasatcparam_16_0074) and
``--modify_mixlist`` (atlasatcparam_16_0071); see docs/precision.md §6.
ONNX op types map to the Ascend IR types ATC converts them to through the op registry
(op_registry/onnx/atc: each plugin's ``ge_op``); an op ATC builds as a subgraph
(``PartitionedCall``) has no single type and is kept by node name only.
"""

from __future__ import annotations

import json
from pathlib import Path

from migrate.core.outputs import write_output
from migrate.precision.sensitivity.autocast_file import render
from migrate.precision.sensitivity.onnx_graph import Graph

SKIP_TYPES = ("Constant", "Identity")  # no computation: nothing to keep


def unit_nodes(keep: list[dict], graph: Graph, ran: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The node names each kept unit made in ``graph`` and what has none: an op unit
    without a node of its op, a module that ran without a node in its scope (a module the
    forward never called has none to keep)."""
    by_unit: dict[str, list[str]] = {}
    missing: list[str] = []
    for u in keep:
        if u["kind"] == "op":
            kind = u["name"][3:]
            names = [n.name for n in graph.nodes if n.op == kind and n.op_type not in SKIP_TYPES]
            if not names:
                missing.append(u["name"])
        else:
            names = []
            for m in u["modules"]:
                got = [n.name for n in graph.nodes if m in n.modules and n.op_type not in SKIP_TYPES]
                if not got and m in ran:
                    missing.append(m if u["kind"] == "module" else f"{u['name']} ({m})")
                names += got
        by_unit[u["name"]] = names
    return by_unit, missing


def missing_note(missing: list[str], graph: Graph) -> str:
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    text = f"{len(missing)} kept unit(s) have no node in the {graph.exporter} ONNX graph: {shown}"
    if any(m.startswith("op:") for m in missing) and not graph.ops_known:
        text += (
            " (this graph does not say which torch op made each node: pass a file exported "
            "with torch.onnx.export(..., dynamo=True))"
        )
    return text


def _ge_of(op_type: str) -> list[str]:
    """The Ascend IR op types ATC converts an ONNX op type to ([] for a subgraph)."""
    from migrate.ops.registry import load_onnx

    row = load_onnx("atc").ops.get(op_type) or {}
    return [g for g in row.get("ge_op") or [] if g != "PartitionedCall"]


def ascend_types(onnx_types: set[str]) -> tuple[list[str], list[str]]:
    """(Ascend IR op types, ONNX types that ATC builds as subgraphs) from the registry."""
    found, sub = set(), set()
    for op in onnx_types:
        ge = _ge_of(op)
        if ge:
            found.update(ge)
        else:
            sub.add(op)
    return sorted(found), sorted(sub)


def keeps(
    keep: list[dict], graph: Graph | None, names: list[str], ge: list[str], subgraphs: list[str]
) -> dict:
    """What each file keeps, exactly: ``keep_dtype.cfg`` the kept units' nodes by name;
    the mixlist, type-level in ATC (op types only, no node names), every node of its
    types in the graph - counted, with how many of them are outside the kept units - and
    none of the subgraph types' nodes; the eager files the module or op names."""
    kept = set(names)
    typed = [n.name for n in (graph.nodes if graph else []) if set(_ge_of(n.op_type)) & set(ge)]
    extra = sum(1 for n in typed if n not in kept)
    alone = [n.name for n in (graph.nodes if graph else []) if n.name in kept and n.op_type in subgraphs]
    mix = (
        f"every node of the Ascend IR op types {', '.join(ge)} ({len(typed)} in this graph, {extra} "
        "outside the kept units): the mixlist is type-level, ATC takes op types there, not node names"
        if ge
        else "no op type"
    )
    if alone:
        mix += (
            f"; not the {len(alone)} kept {'/'.join(subgraphs)} node(s) (subgraph types: keep_dtype.cfg only)"
        )
    modules = sorted({m for u in keep for m in u["modules"]})
    ops = [u["name"] for u in keep if u["kind"] == "op"]
    return {
        "keep_dtype": f"{len(names)} node(s) by name: exactly the kept units' nodes",
        "modify_mixlist": mix,
        "autocast": f"{len(ops)} op(s) by name" if ops else f"{len(modules)} module(s) by name",
        "quant_skip": f"{len(modules)} module(s) by name",
        "mixlist_nodes": len(typed),
        "mixlist_nodes_outside_keep": extra,
    }


def write_outputs(
    out: Path,
    keep: list[dict],
    graph: Graph | None,
    by_unit: dict[str, list[str]],
    fmt_label: str,
    model_name: str,
) -> dict:
    """Write the files (``graph`` None: an empty keep set, nothing to name); return what
    was written (for the JSON report)."""
    out.mkdir(parents=True, exist_ok=True)
    modules = sorted({m for u in keep for m in u["modules"]})
    kept = {name for names in by_unit.values() for name in names}
    nodes = [n for n in graph.nodes if n.name in kept] if graph is not None else []
    names = list(dict.fromkeys(n.name for n in nodes))
    ge, subgraphs = ascend_types({n.op_type for n in nodes})
    files = {
        "keep_dtype.cfg": "".join(f"{n}\n" for n in names),
        "modify_mixlist.json": json.dumps({"black-list": {"to-add": ge}}, indent=2) + "\n",
        "autocast_exclude.py": render(keep, fmt_label, model_name),
        "quant_skip.txt": "".join(f"{m}\n" for m in modules),
    }
    if graph is not None and graph.data is not None:
        files["model.onnx"] = graph.data  # type: ignore[assignment]
    for name, text in files.items():  # a link planted at a name is replaced, never followed
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        write_output(out / name, data, "--keep-out")
    return {
        "dir": str(out),
        "keep_dtype": "keep_dtype.cfg",
        "modify_mixlist": "modify_mixlist.json",
        "autocast": "autocast_exclude.py",
        "quant_skip": "quant_skip.txt",
        "onnx": "model.onnx" if "model.onnx" in files else (graph.source if graph is not None else None),
        "exporter": graph.exporter if graph is not None else None,
        "onnx_nodes": len(names),
        "unit_nodes": {u: len(v) for u, v in by_unit.items()},
        "ascend_types": ge,
        "subgraph_types_kept_by_name": subgraphs,
        "keeps": keeps(keep, graph, names, ge, subgraphs),
        "error": None,
    }
