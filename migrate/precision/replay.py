"""Replay: feed every module the inputs recorded in a reference dump, compare its outputs.

A module whose output differs although its inputs were exactly the reference's introduces
the error; modules that only inherit error upstream replay clean. The first failing module
in execution order (innermost first) is the culprit.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision.compare import ComparisonResult, evaluate_gate, missing_entry
from migrate.precision.dumper import ROOT
from migrate.precision.flatten import decode, iter_tensors
from migrate.precision.judge import compare_records
from migrate.precision.manifest import Dump
from migrate.precision.runner import move
from migrate.precision.thresholds import Gate, load_gate


def _group(records: list[dict]) -> tuple[dict, dict, list]:
    inputs, outputs, order = defaultdict(list), defaultdict(list), []
    for rec in records:
        k = (rec["name"], rec["call"])
        if rec["kind"] == "forward.input":
            inputs[k].append(rec)
        elif rec["kind"] == "forward.output":
            if k not in outputs:
                order.append(k)
            outputs[k].append(rec)
    return inputs, outputs, order


def _run_call(module: Any, spec: Any, in_recs: list[dict], ref: Dump, device: Any,
              dtype: Any) -> list[Any]:
    import torch

    ordered = sorted(in_recs, key=lambda r: r["index"])
    tensors = [move(ref.tensor(r), device, dtype) for r in ordered]
    call = decode(spec, tensors)
    with torch.no_grad():
        out = module(*call["args"], **call["kwargs"])
    return [t for _, t in iter_tensors(out)]


def _judge_outputs(outs: list[Any], out_recs: list[dict], ref: Dump, gate: Gate) -> list[dict]:
    entries = []
    for rec in out_recs:
        if rec["index"] >= len(outs):
            entries.append(missing_entry(rec, "replay"))
            continue
        t = outs[rec["index"]]
        got = {**rec, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        th = gate.for_entry(rec["name"], rec["dtype"], got["dtype"])
        entries.append(compare_records(rec, got, ref.tensor(rec), t.detach().cpu(), th,
                                       gate.rel_floor, replay=True))
    return entries


def replay_model(model: Any, ref_dir: str | Path, gate: Gate | str | Path | None = None,
                 device: Any = None, dtype: Any = None) -> ComparisonResult:
    gate = gate if isinstance(gate, Gate) else load_gate(gate)
    ref = Dump(ref_dir)
    if not ref.has_tensors or not ref.meta.get("inputs"):
        raise UsageError(f"{ref_dir}: replay needs a full dump made with --inputs")
    modules = {name or ROOT: m for name, m in model.named_modules()}
    inputs, outputs, order = _group(ref.records)
    entries = []
    for name, call in order:
        spec = ref.input_specs.get(f"{name}#{call}")
        module = modules.get(name)
        if module is None or spec is None:
            why = "module not in model" if module is None else "no recorded inputs"
            entries.extend({**missing_entry(r, "replay"), "reason": why}
                           for r in outputs[(name, call)])
            continue
        try:
            outs = _run_call(module, spec, inputs[(name, call)], ref, device, dtype)
        except (ValueError, TypeError, RuntimeError) as exc:
            entries.extend({**missing_entry(r, "replay"), "reason": f"replay failed: {exc}"}
                           for r in outputs[(name, call)])
            continue
        entries.extend(_judge_outputs(outs, outputs[(name, call)], ref, gate))
    ref.close()
    culprit = next(({"name": e["name"], "call": e["call"]} for e in entries
                    if e["status"] == "fail"), None)
    passed, violations = evaluate_gate([e for e in entries if e["status"] != "missing"], gate)
    return ComparisonResult(entries=entries, first_divergence=None, passed=culprit is None,
                            violations=violations, allowed_violations=gate.allowed_violations,
                            reference=str(ref_dir), target="replay", culprit=culprit,
                            replay=True)
