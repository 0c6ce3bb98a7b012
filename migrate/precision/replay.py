"""Replay: run the target model once, feeding every module the exact inputs recorded in the
reference dump, and find the code that introduces an error.

Each module's pre-hook swaps the tensors of its call for the reference's (by flatten
order); everything else - caches (``DynamicCache``), configs, flags - stays the live
object, so decoders replay with ``use_cache=True``. Three kinds of evidence, in execution
order (replay_events.py):

* a module's **outputs** against the reference's: the module (with its submodules) made
  the error, since its inputs were the reference's;
* a module's **own code**: before a child's inputs are swapped, they are compared with the
  reference's. They were computed by the calling module from reference inputs (and from
  children that got reference inputs), so a difference was made by the caller's code
  between its children - functional calls, fused ops, in-place math - and is its fault;
* with a reference dumped with ``--apis``, every torch function's output inside a module:
  names the function call (and its ``file:line``) that made the error.

The culprit is the module of the first failing evidence in execution order. It is named
only when it and every descendant were replayed on reference inputs; otherwise, or when
too few outputs could be compared (``min_compared``), the result is inconclusive (exit 2)
with the reason. One forward pass replays every module.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision import run_precision
from migrate.precision.discrete import soften_flips
from migrate.precision.dumper import ROOT
from migrate.precision.flatten import decode
from migrate.precision.manifest import Dump
from migrate.precision.replay_backward import check_backward, has_grads, lead_text
from migrate.precision.replay_events import Replayer
from migrate.precision.replay_exact import ExactReplayer, lift_call, lift_dtype, lifted, watching
from migrate.precision.result import ComparisonResult, evaluate_gate, missing_entry
from migrate.precision.threads import one_intra_op_thread
from migrate.precision.thresholds import Gate, load_gate


def _run(model: Any, rp: Replayer, args: tuple, kwargs: dict, mode: Any = None) -> None:
    import torch

    handles = []
    for name, module in model.named_modules():
        name = name or ROOT
        handles.append(
            module.register_forward_pre_hook(lambda m, a, k, n=name: rp.pre(n, a, k), with_kwargs=True)
        )
        handles.append(
            module.register_forward_hook(lambda m, a, k, o, n=name: rp.post(n, o), with_kwargs=True)
        )
    try:
        with torch.no_grad(), mode if mode is not None else rp.api_mode():
            model(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise UsageError(
            f"replay: the model failed on the reference inputs: {' '.join(str(exc).split())[:300]}"
        ) from None
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

    recs = sorted(
        (r for r in ref.records if (r["name"], r["call"], r["kind"]) == (ROOT, 0, "forward.input")),
        key=lambda r: r["index"],
    )
    try:
        call = decode(spec, [move(ref.stored(r).clone(), device, dtype) for r in recs])
    except ValueError as exc:
        raise UsageError(f"{ref.path}: {exc}; pass the model's inputs (MOD:FN)") from None
    return tuple(call["args"]), dict(call["kwargs"])


def _below(name: str, parent: str) -> bool:
    return parent == ROOT or name.startswith(parent + ".")


def _culprit(rp: Replayer) -> tuple[dict | None, str | None]:
    """The module of the first failing evidence, if it and its descendants were replayed."""
    for owner, entries in rp.events:
        bad = next((e for e in entries if e["status"] == "fail"), None)
        if bad is None:
            continue
        name, call = owner
        if rp.forced.get(owner):
            return None, (
                f"{name}#{call} fails but was not replayed on reference inputs ({rp.forced[owner]})"
            )
        skipped = sorted({n for (n, c), why in rp.forced.items() if why and n != name and _below(n, name)})
        if skipped:
            return None, (
                f"{name}#{call} fails, but its submodules {', '.join(skipped[:5])} "
                "were not replayed on reference inputs: cannot tell which is at "
                "fault"
            )
        culprit = {"name": name, "call": call}
        if bad["kind"] == "forward.child_input":
            culprit["own_code"] = {"before": bad["child"], "reason": bad["reason"]}
        elif bad["kind"] == "api.output":
            culprit["api"] = {
                "function": bad["name"].partition("/")[2],
                "call": bad["call"],
                "location": bad.get("location"),
                "reason": bad["reason"],
            }
        return culprit, None
    return None, None


def _first_pass_entries(rp: Replayer) -> list[dict]:
    """The first pass's evidence in execution order, and the outputs of modules not run."""
    entries = [e for _, evidence in rp.events for e in evidence]
    ran = {owner for owner, _ in rp.events}
    for key in rp.order:
        if key not in ran:
            entries.extend(
                {**missing_entry(r, "replay"), "reason": "module not run in replay"} for r in rp.outputs[key]
            )
    soften_flips(entries, lambda e: rp.failed.get(id(e)))
    return entries


def _coverage(entries: list[dict], rp: Replayer, gate: Gate) -> tuple[int, int, str | None]:
    """How many reference outputs were replayed and compared, of how many; why too few."""
    outputs = [e for e in entries if e["kind"] == "forward.output" and not e.get("exact")]
    compared = sum(1 for e in outputs if e["status"] != "missing" and e.get("replayed"))
    total = sum(len(v) for v in rp.outputs.values())
    if total == 0 or compared < gate.min_compared * total:
        return (
            compared,
            total,
            (
                f"only {compared} of {total} reference outputs were replayed and compared "
                f"(min_compared {gate.min_compared:g}): wrong model or dump?"
            ),
        )
    return compared, total, None


def _exact_pass(
    model: Any, ref: Dump, gate: Gate, ref_class: str | None, dtype: Any, args: tuple, kwargs: dict
) -> tuple[ExactReplayer | None, str | None]:
    """The replay at the reference's precision (replay_exact.py): the replayer, or None
    and why it could not run."""
    with lifted(model, dtype):
        state = {
            id(t)
            for t in (*model.parameters(), *model.buffers())
            if t.is_floating_point()  # what the port rounded: parameters and buffers
        }
        tgt_class = run_precision.run_class({"precision": run_precision.record(model)}, gate.profile)
        rp = ExactReplayer(ref, gate, run_precision.loosest(ref_class, tgt_class), state=state, dtype=dtype)
        call = lift_call({"args": args, "kwargs": kwargs}, dtype)
        try:
            with one_intra_op_thread():
                _run(model, rp, tuple(call["args"]), dict(call["kwargs"]), mode=watching(rp))
        except Exception as exc:  # noqa: BLE001 - a model that cannot run lifted keeps the first pass's verdict
            return None, " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return rp, None


def _exact_culprit(rp: ExactReplayer, dtype: Any) -> dict | None:
    """The module whose own code made the first failing evidence of the exact pass."""
    for (name, call), entries in rp.events:
        bad = next((e for e in entries if e["status"] == "fail"), None)
        if bad is not None:
            before = bad.get("child") or "its output"
            return {
                "name": name,
                "call": call,
                "own_code": {"before": before, "reason": bad["reason"]},
                "precision": str(dtype).removeprefix("torch."),
            }
    return None


def _exact_stage(
    model: Any, ref: Dump, gate: Gate, ref_class: str | None, lift: Any, args: tuple, kwargs: dict
) -> tuple[dict | None, list, dict]:
    """The exact pass after a first pass that found no culprit: (its culprit, its entries,
    its stats)."""
    xrp, failed = _exact_pass(model, ref, gate, ref_class, lift, args, kwargs)
    stats: dict[str, Any] = {"dtype": str(lift).removeprefix("torch."), "not_run": failed}
    if xrp is None:
        return None, [], stats
    exact_entries = [e for _, evidence in xrp.events for e in evidence]
    stats.update(checks=len(exact_entries), skipped=xrp.skipped)
    return _exact_culprit(xrp, lift), exact_entries, stats


def _replay_stats(rp: Replayer, seconds: float, compared: int, total: int, stages: dict) -> dict[str, Any]:
    """The report's ``replay_stats``: the first pass's counts, then each later stage's."""
    return {
        "seconds": round(seconds, 4),
        "compared": compared,
        "outputs": total,
        "own_code_checks": rp.handoffs,
        "api_checks": rp.api_checks,
        "not_replayed": sorted(f"{n}#{c}" for (n, c), w in rp.forced.items() if w),
        **stages,
    }


def replay_model(
    model: Any,
    ref_dir: str | Path,
    gate: Gate | str | Path | None = None,
    device: Any = None,
    dtype: Any = None,
    args: tuple | None = None,
    kwargs: dict | None = None,
    profile: str | None = None,
    precision: dict | None = None,
    apis: bool | None = None,
    loss: Any = None,
) -> ComparisonResult:
    """Replay ``model`` against the reference dump. ``precision`` overrides what is read
    from the flags about the target's compute precision (``meta.precision`` keys, e.g.
    ``{"conv": "hf32"}`` when HF32 is emulated or set where the flags cannot be read).
    ``apis`` (default: when the reference holds them) compares every torch function's
    output inside each module, to name the call that made an error. A reference with
    gradients has them checked by one forward and backward of the target (``loss``: the
    spec's, else the probe loss of ``--grads``; replay_backward.py): gradients are not
    replayed, so a failing one is a lead and fails the replay."""
    gate = gate if isinstance(gate, Gate) else load_gate(gate, profile)
    ref = Dump(ref_dir)
    if not ref.has_tensors or not ref.meta.get("inputs"):
        raise UsageError(f"{ref_dir}: replay needs a full dump made with --inputs")
    if apis and not ref.meta.get("apis"):
        raise UsageError(f"{ref_dir}: replay --apis needs a reference dumped with --apis")
    tgt_prec = {**run_precision.record(model), **(precision or {})}
    tgt_class = run_precision.run_class({"precision": tgt_prec}, gate.profile)
    ref_class = run_precision.run_class(ref.meta, gate.profile)
    rp = Replayer(
        ref,
        gate,
        run_precision.loosest(ref_class, tgt_class),
        apis=bool(ref.meta.get("apis")) if apis is None else apis,
    )
    call_args, call_kwargs = _root_call(ref, args, kwargs, device, dtype)
    t0 = time.perf_counter()
    with one_intra_op_thread():
        _run(model, rp, call_args, call_kwargs)
    seconds = time.perf_counter() - t0
    entries = _first_pass_entries(rp)
    culprit, why = _culprit(rp)
    exact_stats: dict[str, Any] = {}
    lift = lift_dtype(model, ref.meta) if culprit is None and why is None else None
    if lift is not None:
        culprit, exact_entries, exact_stats["exact"] = _exact_stage(
            model, ref, gate, ref_class, lift, call_args, call_kwargs
        )
        entries.extend(exact_entries)
    grads = has_grads(ref)
    ref.close()
    compared, total, thin = _coverage(entries, rp, gate)
    if thin:
        culprit, why = None, thin
    if grads and culprit is None and why is None:
        grad_entries, exact_stats["backward"] = check_backward(
            model, ref_dir, gate, call_args, call_kwargs, loss, tgt_prec
        )
        entries.extend(grad_entries)
        if exact_stats["backward"]["not_run"]:
            why = lead_text(exact_stats["backward"])
    _, violations = evaluate_gate([e for e in entries if e["status"] != "missing"], gate)
    backward_fails = bool(exact_stats.get("backward", {}).get("failing"))
    return ComparisonResult(
        entries=entries,
        passed=culprit is None and why is None and not backward_fails,
        violations=violations,
        allowed_violations=gate.allowed_violations,
        fail_on_missing=gate.fail_on_missing,
        reference=str(ref_dir),
        target="replay",
        culprit=culprit,
        replay=True,
        inconclusive=why,
        precision={"reference": ref_class, "target": tgt_class, "profile": gate.profile_name},
        replay_stats=_replay_stats(rp, seconds, compared, total, exact_stats),
    )
