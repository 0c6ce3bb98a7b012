"""Compare two dumps: check they are comparable, align, stream tensor pairs, judge each
(by the runs' precision class), compare the weights, localize, apply the gate.

Parent folders of distributed dumps (``rank0/``, ``rank1/`` ...) are compared rank by rank.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision.align import Concat, align, load_mapping, strip, unwrap
from migrate.precision.carry import explain_carried, trace_nonfinite
from migrate.precision.checks import IncompatibleDumps, check_alignment, check_meta
from migrate.precision.discrete import soften_flips
from migrate.precision.grad_floor import GradFloors
from migrate.precision.hint import replay_command
from migrate.precision.judge import compare_records
from migrate.precision.localize import first_divergence
from migrate.precision.manifest import Dump, rank_dirs
from migrate.precision.result import ComparisonResult, evaluate_gate, missing_entry
from migrate.precision.run_precision import loosest, run_class
from migrate.precision.threads import one_intra_op_thread
from migrate.precision.thresholds import Gate, load_gate
from migrate.precision.weights import compare_weights

__all__ = ["ComparisonResult", "IncompatibleDumps", "compare_dumps", "evaluate_gate", "missing_entry"]


def compare_dumps(
    ref_dir: str | Path,
    tgt_dir: str | Path,
    gate: Gate | str | Path | None = None,
    mapping: str | Path | None = None,
    profile: str | None = None,
) -> ComparisonResult:
    gate = gate if isinstance(gate, Gate) else load_gate(gate, profile)
    ref_ranks, tgt_ranks = rank_dirs(Path(ref_dir)), rank_dirs(Path(tgt_dir))
    with one_intra_op_thread():
        if ref_ranks or tgt_ranks:
            return _compare_ranks(ref_dir, tgt_dir, ref_ranks, tgt_ranks, gate, mapping)
        return _compare(ref_dir, tgt_dir, gate, mapping)


def _compare_ranks(
    ref_dir, tgt_dir, ref_ranks: dict, tgt_ranks: dict, gate: Gate, mapping
) -> ComparisonResult:
    if set(ref_ranks) != set(tgt_ranks):
        raise IncompatibleDumps(
            f"{ref_dir} holds ranks {sorted(ref_ranks)}, {tgt_dir} ranks {sorted(tgt_ranks)}"
        )
    results = {rank: _compare(ref_ranks[rank], tgt_ranks[rank], gate, mapping) for rank in ref_ranks}
    entries, violations, weights, ranks = [], [], [], []
    for rank, res in results.items():
        entries += [{**e, "rank": rank} for e in res.entries]
        violations += [{**v, "rank": rank} for v in res.violations]
        weights += [{**w, "rank": rank} for w in res.weights]
        ranks.append(
            {
                "rank": rank,
                "passed": res.passed,
                "summary": res.counts(),
                "first_divergence": res.first_divergence,
                "violations": len(res.violations),
            }
        )
    first = next(({**r["first_divergence"], "rank": r["rank"]} for r in ranks if r["first_divergence"]), None)
    return ComparisonResult(
        entries=entries,
        first_divergence=first,
        passed=len(violations) <= gate.allowed_violations,
        violations=violations,
        allowed_violations=gate.allowed_violations,
        fail_on_missing=gate.fail_on_missing,
        reference=str(ref_dir),
        target=str(tgt_dir),
        weights=weights,
        precision=next(iter(results.values())).precision,
        ranks=ranks,
        replay_command=results[first["rank"]].replay_command if first else None,
    )


def _load(d: Dump, side: Any) -> Any:
    """A record's tensor as a numpy array (no torch needed: arrays.py)."""
    if isinstance(side, Concat):
        import numpy as np

        found = [d.array(r) for r in side.records]
        parts = [p for p in found if p is not None]
        if len(parts) < len(found):
            return None
        try:
            return np.concatenate(parts, axis=side.dim)
        except ValueError as exc:  # numpy's AxisError is a ValueError
            raise UsageError(f"fused mapping: cannot concatenate {side['name']}...: {exc}") from None
    return d.array(side)


def _records(ref: Dump, tgt: Dump) -> tuple[list, list, str, str]:
    """The records of the kinds both dumps hold, a wrapper's prefix on either side taken off:
    (reference records, target records, target prefix, reference prefix)."""
    kinds = {r["kind"] for r in ref.records} & {r["kind"] for r in tgt.records}
    ref_recs = [r for r in ref.records if r["kind"] in kinds]
    tgt_recs = [r for r in tgt.records if r["kind"] in kinds]
    prefix = unwrap([r["name"] for r in tgt_recs], [r["name"] for r in ref_recs])
    ref_prefix = unwrap([r["name"] for r in ref_recs], [r["name"] for r in tgt_recs])
    if prefix:  # the wrapper's own outputs are the wrapped model's
        tgt_recs = [r for r in tgt_recs if r["name"] != "<root>"]
    if ref_prefix:  # a wrapped reference: compare under the unwrapped names
        ref_recs = [{**r, "name": strip(r["name"], ref_prefix)} for r in ref_recs if r["name"] != "<root>"]
    return ref_recs, tgt_recs, prefix, ref_prefix


def _compare_pairs(
    pairs: list, ref: Dump, tgt: Dump, gate: Gate, run: Any, floors: GradFloors
) -> tuple[list, dict, dict, dict, dict]:
    """One entry per aligned pair (a missing target's entry for an unpaired reference):
    (entries, pairs by (name, call), entries by record position, thresholds by position,
    (record, other, thresholds) by entry key).
    Pairs reading the same tensors under the same thresholds are compared once."""
    entries: list = []
    cache: dict = {}
    by_call: dict = {}
    by_pos: dict = {}
    th_of: dict = {}
    where: dict = {}
    for rec, other in pairs:
        by_call.setdefault((rec["name"], rec["call"]), []).append((rec, other))
        if other is None:
            entries.append(missing_entry(rec, "target"))
            continue
        th = gate.for_entry(rec["name"], rec["dtype"], other["dtype"], run, kind=rec["kind"])
        if rec["kind"].startswith("backward."):
            th["norm_floor"] = floors.floor(rec, gate.grad_floor_of(th))
        ck = (
            rec.get("file"),
            rec.get("tensor"),
            other.get("file"),
            other.get("tensor"),
            tuple(sorted((k, str(v)) for k, v in th.items())),
        )
        if None not in ck[:4] and ck in cache:
            entry = {**cache[ck], **{k: rec[k] for k in ("name", "call", "kind", "index")}}
        else:
            entry = compare_records(rec, other, _load(ref, rec), _load(tgt, other), th)
            cache[ck] = entry
        entry.pop("tied", None)
        if rec.get("tied"):  # one parameter held by several modules: name them all
            entry["tied"] = rec["tied"]
        entries.append(entry)
        by_pos[rec["_pos"]], th_of[rec["_pos"]] = entry, th
        where[_key(rec)] = (rec, other, th)
    return entries, by_call, by_pos, th_of, where


def _first(entries: list, nonfinite: dict | None, by_call: dict) -> dict | None:
    """The first divergence, with its cause and the detail of its call's pairs."""
    first = first_divergence(entries)
    if (
        nonfinite is not None
        and first is not None
        and (nonfinite["name"], nonfinite["call"]) != (first["name"], first["call"])
        and nonfinite.get("cause") == "range"
        and first_divergence([nonfinite])
    ):
        first = first_divergence([nonfinite])  # NaN made by a step outranks what follows
    if first is not None:
        cause = next(
            (
                e.get("cause")
                for e in entries
                if e.get("cause")
                and (e["name"], e["call"], e["kind"]) == (first["name"], first["call"], first["kind"])
            ),
            None,
        )
        if cause:
            first["cause"] = cause
        first["detail"] = _detail(by_call.get((first["name"], first["call"]), []))
    return first


def _compare(
    ref_dir: str | Path, tgt_dir: str | Path, gate: Gate, mapping_path: str | Path | None
) -> ComparisonResult:
    ref, tgt = Dump(ref_dir), Dump(tgt_dir)
    for pos, rec in enumerate(ref.records):  # lineage links name record positions
        rec["_pos"] = pos
    mapping = load_mapping(mapping_path)
    check_meta(ref, tgt, mapping.given)
    ref_recs, tgt_recs, prefix, ref_prefix = _records(ref, tgt)
    pairs, extra = align(ref_recs, tgt_recs, mapping, prefix)
    check_alignment(pairs, ref_dir, tgt_dir)
    classes = {
        "reference": run_class(ref.meta, gate.profile),
        "target": run_class(tgt.meta, gate.profile),
        "profile": gate.profile_name,
    }
    run = loosest(classes["reference"], classes["target"])
    entries, by_call, by_pos, th_of, where = _compare_pairs(pairs, ref, tgt, gate, run, GradFloors(ref_recs))
    entries.extend(missing_entry(r, "reference") for r in extra)
    soften_flips(entries, lambda e: _arrays(ref, tgt, where.get(_key(e))))
    by_rec = {r["_pos"]: r for r in ref_recs}
    explain_carried(by_pos, by_rec, th_of, gate.carry_gain)
    nonfinite = trace_nonfinite(by_pos, by_rec)
    ref.close()
    tgt.close()
    weights = [
        w
        for w in compare_weights(ref.meta, tgt.meta, mapping, prefix, ref_prefix)
        if not gate.skips(w["name"].rpartition(".")[0] or "<root>")
    ]
    passed, violations = evaluate_gate(entries, gate, weights)
    first = _first(entries, nonfinite, by_call)
    if weights:
        classes["root_cause"] = weights[0]["reason"]
    command = replay_command(ref.meta, tgt.meta, ref_dir) if first is not None else None
    return ComparisonResult(
        entries=entries,
        first_divergence=first,
        passed=passed,
        violations=violations,
        allowed_violations=gate.allowed_violations,
        fail_on_missing=gate.fail_on_missing,
        reference=str(ref_dir),
        target=str(tgt_dir),
        weights=weights,
        precision=classes,
        replay_command=command,
    )


def _key(r: dict) -> tuple:
    return r["name"], r["call"], r["kind"], r["index"]


def _arrays(ref: Dump, tgt: Dump, found: tuple | None) -> tuple[Any, Any, dict] | None:
    """Both sides' arrays of one aligned pair and its thresholds, None without full tensors."""
    if found is None:
        return None
    rec, other, th = found
    a, b = _load(ref, rec), _load(tgt, other)
    return None if a is None or b is None else (a, b, th)


_STATS = ("min", "max", "mean", "norm", "nan", "inf")


def _detail(pairs: list) -> list[dict[str, Any]]:
    """The stats of every tensor of the diverging call, both sides: its inputs and outputs."""
    out = []
    for rec, other in pairs:
        rs = rec.get("stats") or {}
        ts = (other.get("stats") if other is not None else None) or {}
        out.append(
            {
                "kind": rec["kind"],
                "index": rec["index"],
                "shape": rec["shape"],
                "reference": {k: rs.get(k) for k in _STATS},
                "target": {k: ts.get(k) for k in _STATS} if ts else None,
            }
        )
    return out
