"""Gradients are not replayed: replay feeds modules their reference *forward* inputs only.

So that a replay never passes what it did not check, a reference holding gradients (dumped
with ``--grads``) gets one more run once the forward replay names nothing: the target runs
forward and backward from the same inputs and loss as ``migrate dump --grads`` would, into
a temporary dump, and its gradient records are compared with the reference's (compare's
thresholds, carried errors and floors). A failing backward record is a lead - the first
ones are named, module and parameter - and the replay fails: the backward of that module
(a custom autograd function, a fused op's gradient) or what feeds it is wrong, but which
module's own backward code made it is not localized, since no gradient was swapped for the
reference's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision.manifest import Dump
from migrate.precision.thresholds import Gate

LEADS = 3  # failing backward records named as the lead


def has_grads(ref: Dump) -> bool:
    return bool(ref.meta.get("grads")) and any(r["kind"].startswith("backward.") for r in ref.records)


def _paths(ref_dir: str | Path) -> dict[tuple, str]:
    """The parameter name of each ``backward.parameter`` record (its ``path``)."""
    ref = Dump(ref_dir)
    try:
        return {
            (r["name"], r["call"], r["index"]): r.get("path") or ""
            for r in ref.records
            if r["kind"] == "backward.parameter"
        }
    finally:
        ref.close()


def _lead(entries: list[dict], paths: dict[tuple, str]) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        if e["status"] != "fail":
            continue
        lead = {k: e[k] for k in ("name", "call", "kind", "index", "reason")}
        if e["kind"] == "backward.parameter":
            lead["parameter"] = paths.get((e["name"], e["call"], e["index"])) or None
        out.append(lead)
        if len(out) == LEADS:
            break
    return out


def _run_backward(
    model: Any, out: Path, ref: Dump, args: tuple, kwargs: dict, loss: Any, precision: dict | None
) -> None:
    import torch

    from migrate.precision.dumper import dump
    from migrate.precision.runner import backward_from

    with (
        torch.enable_grad(),
        dump(
            model,
            out,
            grads=True,
            include=ref.meta.get("include"),
            exclude=ref.meta.get("exclude"),
            precision=precision,
        ),
    ):
        backward_from(model(*args, **kwargs), loss)
    for p in model.parameters():
        p.grad = None


def check_backward(
    model: Any,
    ref_dir: str | Path,
    gate: Gate,
    args: tuple,
    kwargs: dict,
    loss: Any = None,
    precision: dict | None = None,
) -> tuple[list[dict], dict[str, Any]]:
    """The target's gradient entries (``"replayed": false``) and the ``backward`` stats:
    ``{"replayed": false, "compared", "failing", "lead": [...], "not_run"}``."""
    from migrate.precision.compare import compare_dumps

    ref = Dump(ref_dir)
    with tempfile.TemporaryDirectory(prefix="migrate-replay-grads-") as tmp:
        out = Path(tmp) / "target"
        try:
            _run_backward(model, out, ref, args, kwargs, loss, precision)
            result = compare_dumps(ref_dir, out, gate=gate)
        except (UsageError, RuntimeError, TypeError, ValueError) as exc:
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            return [], {"replayed": False, "compared": 0, "failing": 0, "lead": [], "not_run": why}
        finally:
            ref.close()
    entries = [{**e, "replayed": False} for e in result.entries if e["kind"].startswith("backward.")]
    failing = [e for e in entries if e["status"] == "fail"]
    return entries, {
        "replayed": False,
        "compared": sum(1 for e in entries if e["status"] != "missing"),
        "failing": len(failing),
        "lead": _lead(entries, _paths(ref_dir)),
        "not_run": None,
    }


def lead_text(stats: dict[str, Any]) -> str:
    """The locus line of a replay whose forward passed and whose gradients did not."""
    if stats.get("not_run"):
        return (
            "the reference holds gradients, but the target's backward could not be run to "
            f"check them ({stats['not_run']})"
        )
    shown = []
    for lead in stats["lead"]:
        what = f"{lead['name']}#{lead['call']} {lead['kind']}[{lead['index']}]"
        if lead.get("parameter"):
            what += f" (parameter {lead['name']}.{lead['parameter']})"
        shown.append(f"{what}: {lead['reason']}")
    return (
        "none among the forward modules, but backward records are not replayed and "
        f"{stats['failing']} gradient(s) of the target fail; lead, the first failing backward "
        f"record(s): {'; '.join(shown)} - check that module's backward (a custom autograd "
        "function, a fused op's gradient)"
    )
