"""The ATen op coverage report (docs/contracts.md §4) of a PyTorch model: eval or train."""

from __future__ import annotations

import contextlib

from migrate.core import threads
from migrate.core.errors import UsageError
from migrate.ops.aten import run, where
from migrate.ops.aten.capture import CaptureError, Census, make_modes, module_hooks
from migrate.ops.aten.judge import JUDGED_FOR, Judge
from migrate.ops.registry import CPU_FALLBACK, SUPPORTED, load_aten
from migrate.ops.rewrites import offered
from migrate.ops.versions import mismatch_advice, torch_versions

OPTION = "--torch"


def _step(model, args, kwargs, census: Census, train: bool, loss, optimizer) -> None:
    import torch

    if not train:
        with torch.no_grad():
            run.forward(model, args, kwargs, OPTION)
        return
    out = run.forward(model, args, kwargs, OPTION)
    census.phase = "loss"
    try:
        value = loss(out) if loss is not None else run.default_loss(out)
        census.phase = "backward"
        value.backward()
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's loss or backward failed: bad input
        raise UsageError(
            f"{OPTION} --train: {census.phase} failed: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        ) from None
    census.phase = "optimizer"
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad()


def capture(
    model, args, kwargs, target: str | None = None, train: bool = False, loss=None, optimizer=None
) -> tuple[Census, Judge]:
    """Run one eval forward (``train=False``) or one training step under capture."""
    judge, census = Judge(target), Census(locate_all=train)
    function_mode, dispatch_mode, flush = make_modes(census, judge)
    is_module = hasattr(model, "named_modules")
    handles = module_hooks(model, census, flush) if is_module else []
    accumulators = where.tag_parameters(model) if train and is_module else []
    if is_module:
        model.train(train)
    if train and optimizer is None and is_module:
        optimizer = run.default_optimizer(model)
    stop = threads.in_new_threads(lambda: _modes(function_mode, dispatch_mode))
    try:
        with function_mode(), dispatch_mode():
            _step(model, args, kwargs, census, train, loss, optimizer)
            flush()
    finally:
        stop()
        for h in handles:
            h.remove()
        accumulators.clear()
    return census, judge


@contextlib.contextmanager
def _modes(function_mode, dispatch_mode):
    """The capture's modes in a thread the model starts (modes are per thread)."""
    with function_mode(), dispatch_mode():
        yield


def _rows(census: Census, judge: Judge) -> list[dict]:
    ops = sorted(census.rows.values(), key=lambda r: (r["status"] == SUPPORTED, r["op"]))
    for row in ops:
        if row["status"] == CPU_FALLBACK:
            fix = offered(judge.reg.rewrites, row["op"])
            if fix:
                row["rewrite"] = fix
    return ops


def aten_census(
    spec: str, target: str | None = None, device: str = "cpu", dtype: str | None = None, train: bool = False
) -> dict:
    """The op coverage report of the model that ``spec`` (MOD:FN) builds."""
    from migrate.core.model_spec import load_model_spec

    reg = load_aten(target)  # a bad --target is reported before any user code runs
    got = load_model_spec(spec, OPTION)
    run.check_runnable(got.model, OPTION)
    model, args, kwargs = run.move(got.model, got.args, got.kwargs, device=device, dtype=dtype)
    try:
        census, judge = capture(model, args, kwargs, target, train, got.loss, got.optimizer)
    except CaptureError as exc:
        raise UsageError(f"{OPTION} {spec}: internal error of the capture: {exc}") from None
    ops = _rows(census, judge)
    summary = {s: 0 for s in ("supported", "unsupported", "restricted", "cpu-fallback")}
    for row in ops:
        summary[row["status"]] += 1
    versions = torch_versions(reg)
    advice = []
    if summary[CPU_FALLBACK]:
        advice.append(
            "ops without an NPU kernel run on the CPU with a one-time warning; set "
            "TORCH_NPU_FALLBACK_CPU_DISABLE=1 to make them errors"
        )
    mismatch = mismatch_advice(versions, reg.version)
    if mismatch:
        advice.append(mismatch)
    return {
        "model": spec,
        "target": reg.version,
        "device": device,
        "dtype": dtype,
        "judged_for": JUDGED_FOR,
        "mode": "train" if train else "eval",
        "torch": versions,
        "ops": ops,
        "summary": {
            **summary,
            "ops": len(ops),
            "calls": sum(r["count"] for r in ops),
            "warnings": len(census.warnings),
            "errors": len(census.errors),
        },
        "warnings": list(census.warnings.values()),
        "errors": census.errors,
        "advice": advice,
    }
