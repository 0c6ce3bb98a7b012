"""Replay: run the target model once, feeding every module the exact inputs recorded in the
reference dump, and compare each module's outputs with the reference's.

Each module's pre-hook swaps the tensors of its call for the reference's (by flatten
order); everything else - caches (``DynamicCache``), configs, flags - stays the live
object, so decoders replay with ``use_cache=True``. A module whose output differs although
its inputs were the reference's introduces the error (with its submodules: the innermost
failing module in execution order is the culprit); modules that only inherit error replay
clean. One forward pass replays every module, so replay costs about one forward plus
reading the reference.

A culprit is named only when it and every descendant were replayed on reference inputs;
otherwise, or when too few outputs could be compared (``min_compared``), the result is
inconclusive (exit 2) with the reason.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision import run_precision
from migrate.precision.discrete import soften_flips
from migrate.precision.dumper import ROOT
from migrate.precision.flatten import decode, iter_tensors, substitute
from migrate.precision.judge import compare_records
from migrate.precision.manifest import Dump
from migrate.precision.result import ComparisonResult, evaluate_gate, missing_entry
from migrate.precision.threads import one_intra_op_thread
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
    for recs in inputs.values():
        recs.sort(key=lambda r: r["index"])
    return inputs, outputs, order


class _Replayer:
    def __init__(self, model: Any, ref: Dump, gate: Gate, run_class: str | None) -> None:
        self.model, self.ref, self.gate, self.run_class = model, ref, gate, run_class
        self.inputs, self.outputs, self.order = _group(ref.records)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: dict[str, list[int]] = defaultdict(list)
        self.entries: dict[tuple, list[dict]] = {}
        self.forced: dict[tuple, str] = {}  # (name, call) -> "" or why not replayed

    def pre(self, name: str, args: tuple, kwargs: dict) -> tuple | None:
        call = self.calls[name]
        self.calls[name] += 1
        self.stack[name].append(call)
        live = [t for _, t in iter_tensors({"args": args, "kwargs": kwargs})]
        recs = self.inputs.get((name, call), [])
        why = ""
        if not recs and live:
            why = "no recorded inputs"
        elif len(recs) != len(live):
            why = f"{len(live)} input tensors, the reference recorded {len(recs)}"
        elif any(list(t.shape) != r["shape"] for t, r in zip(live, recs, strict=True)):
            why = "input shapes differ from the reference's"
        self.forced[(name, call)] = why
        if why or not live:
            return None
        # copies: the model may modify its inputs in place, and a shard's tensors are
        # shared by every read of that shard
        new = [self.ref.tensor(r).to(device=t.device, dtype=t.dtype, copy=True)
               for t, r in zip(live, recs, strict=True)]
        call_args = substitute({"args": args, "kwargs": kwargs}, iter(new))
        return tuple(call_args["args"]), dict(call_args["kwargs"])

    def post(self, name: str, output: Any) -> None:
        stack = self.stack[name]
        call = stack.pop() if stack else self.calls[name] - 1
        outs = [t for _, t in iter_tensors(output)]
        entries = []
        for rec in self.outputs.get((name, call), []):
            if rec["index"] >= len(outs):
                entries.append(missing_entry(rec, "replay"))
                continue
            t = outs[rec["index"]].detach()
            got = {**rec, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
            th = self.gate.for_entry(name, rec["dtype"], got["dtype"], self.run_class,
                                     replay=True)
            entry = compare_records(rec, got, self.ref.tensor(rec), t.cpu(), th)
            entry["replayed"] = not self.forced.get((name, call))
            if not entry["replayed"]:
                entry["reason"] = (entry["reason"] + "; " if entry["reason"] else "") + \
                    f"not replayed: {self.forced[(name, call)]}"
            entries.append(entry)
        self.entries[(name, call)] = entries


def _run(model: Any, rp: _Replayer, args: tuple, kwargs: dict) -> None:
    import torch

    handles = []
    for name, module in model.named_modules():
        name = name or ROOT
        handles.append(module.register_forward_pre_hook(
            lambda m, a, k, n=name: rp.pre(n, a, k), with_kwargs=True))
        handles.append(module.register_forward_hook(
            lambda m, a, k, o, n=name: rp.post(n, o), with_kwargs=True))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise UsageError(f"replay: the model failed on the reference inputs: "
                         f"{' '.join(str(exc).split())[:300]}") from None
    finally:
        for h in handles:
            h.remove()


def _root_call(ref: Dump, args: tuple | None, kwargs: dict | None, device, dtype):
    if args is not None:
        return tuple(args), dict(kwargs or {})
    spec = ref.input_specs.get(f"{ROOT}#0")
    if spec is None:
        raise UsageError(f"{ref.path}: no recorded root inputs; pass the model's inputs")
    from migrate.precision.runner import move

    recs = sorted((r for r in ref.records if (r["name"], r["call"], r["kind"]) ==
                   (ROOT, 0, "forward.input")), key=lambda r: r["index"])
    try:
        call = decode(spec, [move(ref.tensor(r).clone(), device, dtype) for r in recs])
    except ValueError as exc:
        raise UsageError(f"{ref.path}: {exc}; pass the model's inputs (MOD:FN)") from None
    return tuple(call["args"]), dict(call["kwargs"])


def _culprit(rp: _Replayer, names: list[str]) -> tuple[dict | None, str | None]:
    """The innermost first failing module, if it and its descendants were replayed."""
    for key in rp.order:
        entries = rp.entries.get(key, [])
        if not any(e["status"] == "fail" for e in entries):
            continue
        name, call = key
        if rp.forced.get(key):
            return None, (f"{name}#{call} fails but was not replayed on reference inputs "
                          f"({rp.forced[key]})")
        prefix = "" if name == ROOT else name + "."
        skipped = sorted({n for (n, c), why in rp.forced.items() if why and n != name and
                          (name == ROOT or n.startswith(prefix))})
        if skipped:
            return None, (f"{name}#{call} fails, but its submodules {', '.join(skipped[:5])} "
                          "were not replayed on reference inputs: cannot tell which is at "
                          "fault")
        return {"name": name, "call": call}, None
    return None, None


def replay_model(model: Any, ref_dir: str | Path, gate: Gate | str | Path | None = None,
                 device: Any = None, dtype: Any = None, args: tuple | None = None,
                 kwargs: dict | None = None, profile: str | None = None,
                 precision: dict | None = None) -> ComparisonResult:
    """Replay ``model`` against the reference dump. ``precision`` overrides what is read
    from the flags about the target's compute precision (``meta.precision`` keys, e.g.
    ``{"conv": "hf32"}`` when HF32 is emulated or set where the flags cannot be read)."""
    gate = gate if isinstance(gate, Gate) else load_gate(gate, profile)
    ref = Dump(ref_dir)
    if not ref.has_tensors or not ref.meta.get("inputs"):
        raise UsageError(f"{ref_dir}: replay needs a full dump made with --inputs")
    tgt_prec = {**run_precision.record(model), **(precision or {})}
    tgt_class = run_precision.run_class({"precision": tgt_prec}, gate.profile)
    ref_class = run_precision.run_class(ref.meta, gate.profile)
    rp = _Replayer(model, ref, gate, run_precision.loosest(ref_class, tgt_class))
    call_args, call_kwargs = _root_call(ref, args, kwargs, device, dtype)
    t0 = time.perf_counter()
    with one_intra_op_thread():
        _run(model, rp, call_args, call_kwargs)
    seconds = time.perf_counter() - t0
    entries = []
    for key in rp.order:
        entries.extend(rp.entries.get(key) or [
            {**missing_entry(r, "replay"), "reason": "module not run in replay"}
            for r in rp.outputs[key]])
    ref.close()
    soften_flips(entries)
    culprit, why = _culprit(rp, [n for n, _ in rp.order])
    compared = sum(1 for e in entries if e["status"] != "missing" and e.get("replayed"))
    total = sum(len(v) for v in rp.outputs.values())
    if total == 0 or compared < gate.min_compared * total:
        why = (f"only {compared} of {total} reference outputs were replayed and compared "
               f"(min_compared {gate.min_compared:g}): wrong model or dump?")
        culprit = None
    _, violations = evaluate_gate([e for e in entries if e["status"] != "missing"], gate)
    return ComparisonResult(
        entries=entries, passed=culprit is None and why is None, violations=violations,
        allowed_violations=gate.allowed_violations,
        fail_on_missing=gate.fail_on_missing, reference=str(ref_dir), target="replay",
        culprit=culprit, replay=True, inconclusive=why,
        precision={"reference": ref_class, "target": tgt_class, "profile": gate.profile_name},
        replay_stats={"seconds": round(seconds, 4), "compared": compared, "outputs": total,
                      "not_replayed": sorted(f"{n}#{c}" for (n, c), w in rp.forced.items()
                                             if w)})
