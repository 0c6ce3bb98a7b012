"""Errors a module was handed, not made: failures explained by the errors of what the
tensor was computed from (the dump's lineage, lineage.py).

Across a whole low-precision run, rounding error grows with depth: BatchNorm on the
statistics of a batch of 2 re-normalises every layer's noise, a squeeze-excite reduction
cancels, a deep network in bf16 drifts past a band meant for ten roundings. Each step
amplifies what it was handed by a bounded factor; a port error makes a jump. So a failing
entry whose relative error is at most ``carry_gain`` times the largest relative error of
its sources (``max(1, cond)`` times more for a cancelling linear layer), and whose wrong
factor (scale_err) is at most that times its sources' wrong factor, becomes a warning
that names the source. The sources:

* a module's output: the outputs its inputs were, and its children's outputs;
* a module's input or weight gradient: its output gradient, and its children's input
  gradients;
* a module's output gradient: the input gradients of the calls that consumed its output,
  and the output gradient of the call whose output it was.

An entry with an unknown source (a tensor made by the model's own code from nothing
recorded; a dump without lineage) keeps its verdict; so do NaN/Inf and shape failures.
The first entry that jumps keeps failing and is the first divergence.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from migrate.precision.classes import registry
from migrate.precision.judge import failing_metrics
from migrate.precision.lineage import UNKNOWN

_OUT, _GIN, _GOUT, _PARAM = (
    "forward.output",
    "backward.grad_input",
    "backward.grad_output",
    "backward.parameter",
)


def rec_call(rec: dict) -> tuple[str, int]:
    return rec["name"], rec["call"]


def _norm(rec: dict | None) -> float | None:
    norm = ((rec or {}).get("stats") or {}).get("norm")
    return float(norm) if isinstance(norm, (int, float)) and math.isfinite(norm) else None


class SourceGraph:
    """Sources of each entry, from the reference records (``pos`` = record position)."""

    def __init__(self, records: dict[int, dict], entries: dict[int, dict]) -> None:
        self.entries = entries
        self.calls: dict[tuple[str, int], list[int]] = defaultdict(list)  # forward outputs
        self.of_pos: dict[int, tuple[str, int]] = {}
        self.consumers: dict[int, set[tuple[str, int]]] = defaultdict(set)
        # calls whose input the caller's own code made, maybe from this output (in order)
        self.scope_users: dict[int, list[tuple[str, int]]] = defaultdict(list)
        self.parent: dict[int, set[tuple[str, int]]] = defaultdict(set)
        self.by_key: dict[tuple[str, int, str], list[int]] = defaultdict(list)
        self.by_name: dict[tuple[str, str], list[int]] = defaultdict(list)
        for pos in sorted(records):
            rec = records[pos]
            call = (rec["name"], rec["call"])
            self.by_key[(*call, rec["kind"])].append(pos)
            self.by_name[(rec["name"], rec["kind"])].append(pos)
            if rec["kind"] != _OUT:
                continue
            self.calls[call].append(pos)
            self.of_pos[pos] = call
            for s in rec.get("src") or ():
                self.consumers[s].add(call)
            for s in rec.get("scope") or ():
                self.scope_users[s].append(call)
            for k in rec.get("kids") or ():
                self.parent[k].add(call)
        self.records = records

    def _kid_calls(self, call: tuple[str, int]) -> set[tuple[str, int]]:
        first = self.calls.get(call)
        if not first:
            return set()
        kids = self.records[first[0]].get("kids") or ()
        return {self.of_pos[k] for k in kids if k in self.of_pos}

    def _forward(self, rec: dict) -> list[int]:
        """The forward tensors a backward step reads: the call's outputs and inputs (a
        weight gradient multiplies the output gradient by the input; an activation's and
        a normalisation's backward use their forward values)."""
        calls = (
            [(rec["name"], rec["call"])]
            if rec["kind"] != _PARAM
            else [c for c in self.calls if c[0] == rec["name"]]
        )
        out = []
        for call in calls:
            for p in self.calls.get(call, ()):
                out.append(p)
                out += [
                    s
                    for s in (*(self.records[p].get("src") or ()), *(self.records[p].get("scope") or ()))
                    if s != UNKNOWN
                ]
        return out

    def cond(self, pos: int) -> float:
        """The amplification a step may add: the forward call's ``cond`` (lineage.py);
        for an input gradient also how far it cancels: ``|g| |y| / (|x| |grad_x|)``, the
        size the backward would give for the forward's gain |y|/|x| against what it gave
        (BatchNorm over two values: the input gradient nearly cancels to zero)."""
        rec = self.records[pos]
        if rec["kind"] == _OUT:
            return rec.get("cond") or 1.0
        if rec["kind"] == _PARAM:
            return self._param_cond(rec)
        first = self.calls.get((rec["name"], rec["call"]))
        if not first:
            return 1.0
        out = self.records[first[0]]
        cond = out.get("cond") or 1.0
        if rec["kind"] == _GIN:
            found = [_norm(self.records.get(p)) for p in self.by_key[(*rec_call(rec), _GOUT)]]
            g = [v for v in found if v]
            x = out.get("xnorm")
            y, gx = _norm(out), _norm(rec)
            if x and gx and y and g and len(g) == len(found):
                cond = max(cond, math.sqrt(sum(v * v for v in g)) * y / (x * gx))
        return cond

    def _param_cond(self, rec: dict) -> float:
        """How far a weight gradient cancels: a sum over rows of output gradient times
        input, whose size for unrelated rows would be ``|g| |x| / sqrt(rows)`` (``|g|``
        for a 1-D parameter: a bias, a norm's scale), against its size."""
        found = [_norm(self.records.get(p)) for p in self.by_name[(rec["name"], _GOUT)]]
        g = [v for v in found if v]
        grad = _norm(rec)
        if not grad or not g or len(g) < len(found):
            return 1.0
        size = math.sqrt(sum(v * v for v in g))
        if len(rec["shape"]) >= 2:
            out = next((self.records[p[0]] for c, p in self.calls.items() if c[0] == rec["name"] and p), None)
            x = (out or {}).get("xnorm")
            rows = math.prod((out or {}).get("shape") or [0]) / max(rec["shape"][0], 1)
            if not x or rows < 1:
                return 1.0
            size *= x / math.sqrt(rows)
        return max(1.0, size / grad)

    def sources(self, pos: int) -> list[int] | None:
        """Positions of the entries ``pos`` was computed from; None when unknown."""
        rec = self.records[pos]
        kind, call = rec["kind"], (rec["name"], rec["call"])
        if kind == _OUT:
            src = rec.get("src")
            if src is None or UNKNOWN in src:
                return None
            return [*src, *(rec.get("scope") or ()), *(rec.get("kids") or ())]
        if kind in (_GIN, _PARAM):
            own = self.by_key[(*call, _GOUT)] if kind == _GIN else self.by_name[(rec["name"], _GOUT)]
            kids = [p for kid in self._kid_calls(call) for p in self.by_key[(*kid, _GIN)]]
            return [*own, *kids, *self._forward(rec)] or None
        if kind == _GOUT:
            return self._handed_back(self.calls.get(call, ()), 0) or None
        return None

    def _handed_back(self, outputs: Any, depth: int) -> list[int]:
        """The gradients that flowed back into these forward outputs: the input gradients
        of the calls that consumed them, and the output gradient of the call that returned
        them - or, where that was not recorded (a hook on a tensor later changed in place
        does not fire), what flowed into that call's outputs in turn."""
        out: list[int] = []
        for p in outputs:
            # the calls that took it as it was, else the first one that took what the
            # caller's code made of it (``x += residual`` in place, then an activation)
            users = self.consumers.get(p) or self.scope_users.get(p, [])[:1]
            for user in users:  # an in-place consumer records no input gradient
                out += self.by_key[(*user, _GIN)] or self.by_key[(*user, _GOUT)]
            for up in self.parent.get(p, ()):
                got = self.by_key[(*up, _GOUT)]
                if not got and depth < 32:
                    got = self._handed_back(self.calls.get(up, ()), depth + 1)
                out += got
        return out


def _step(
    entry: dict, sources: list[dict], allow: float, local: float, rel_max: float | None
) -> tuple[bool, int | None]:
    """Is ``entry``'s error what one honest step makes of its sources' errors: relative
    error within ``allow`` times theirs plus ``local`` (fresh rounding), and a significant
    wrong factor (scale_err) within ``allow`` times theirs - or their relative error, once
    that is past the class's ``rel_err_max`` (noise that large turns into a factor at the
    next ill-conditioned step, and a wrong factor of its size cannot be told from it)?
    Returns the verdict and the index of the source with the largest error."""
    rel = entry.get("rel_err")
    if rel is None:
        return False, None
    noise = next((i for i, s in enumerate(sources) if s.get("floored")), None)
    if noise is not None:  # computed from a gradient that is rounding noise
        return True, noise
    if not sources or entry.get("floored"):  # a chain starts: fresh rounding, or noise
        return (rel <= local or bool(entry.get("floored"))), None
    handed = [_handed(s, entry) for s in sources]
    rels = [r for r in handed if r is not None]
    if len(rels) < len(handed):
        return False, None
    top = max(range(len(sources)), key=lambda i: rels[i])
    if rel > allow * rels[top] + local:
        return False, top
    scale = entry.get("scale_err")
    if scale is not None and scale > (entry.get("scale_noise") or 0.0):
        in_scale = max((s.get("scale_err") or 0.0) for s in sources)
        if rel_max is not None and rels[top] > rel_max:
            in_scale = max(in_scale, rels[top])
        if scale > allow * in_scale + local:
            return False, top
    return True, top


def _handed(src: dict, entry: dict) -> float | None:
    """The relative error ``src`` hands to ``entry``. A backward step reads forward values
    through kinks (ReLU masks, max-pool choices): values within their error of a kink
    flip, a share of about the forward relative error, and take that share of the
    gradient's energy with them - the square root of the forward error."""
    rel = src.get("rel_err")
    if rel is not None and entry["kind"].startswith("backward.") and src["kind"].startswith("forward."):
        return max(rel, math.sqrt(rel))
    return rel


def _why(src: dict, entry: dict, allow: float) -> str:
    ratio = entry["rel_err"] / src["rel_err"] if src["rel_err"] else 0.0
    return (
        f"carried: {src['name']}#{src['call']} {src['kind'].split('.')[-1]} already had "
        f"rel err {src['rel_err']:.3g} (x{ratio:.2g}, within x{allow:.3g})"
    )


# Fresh rounding one step may add: this many unit roundoffs of the class.
LOCAL_ROUNDINGS = 4.0


def explain_carried(
    entries_by_pos: dict[int, dict], records_by_pos: dict[int, dict], thresholds: dict[int, dict], gain: float
) -> int:
    """Turn failures carried from their sources into warnings (in place); returns how
    many. ``thresholds`` are each entry's, ``gain`` the amplification a step may honestly
    add (thresholds.yaml carry_gain).

    Every entry is checked, passing or not: its error is *honest* when one step explains
    it from its sources' and the source with the largest error is honest too, back to
    entries without a recorded source whose error is fresh rounding. A failure is carried
    only along such a chain, so a fault just under the band (a jump from rounding level)
    still fails wherever its amplified error crosses the band later."""
    if gain <= 0:
        return 0
    graph = SourceGraph(records_by_pos, entries_by_pos)
    step = {pos: _check(pos, entries_by_pos, graph, thresholds.get(pos), gain) for pos in entries_by_pos}
    honest: dict[int, bool] = {}
    for pos in step:  # follow each chain of largest sources to its end (or a cycle)
        chain: list[int] = []
        cur: int | None = pos
        while cur is not None and cur not in honest and cur not in chain:
            chain.append(cur)
            ok, top, _ = step[cur]
            cur = top if ok else None
        verdict = (
            honest.get(cur, False) if cur is not None else step[chain[-1]][0] and step[chain[-1]][1] is None
        )
        for c in chain:
            honest[c] = verdict
    changed = 0
    for pos, (_, top, allow) in step.items():
        entry = entries_by_pos[pos]
        if (
            top is None
            or not honest[pos]
            or entry["status"] != "fail"
            or not failing_metrics(entry, thresholds[pos])
        ):
            continue
        entry["status"] = "warn"
        entry["reason"] = f"{entry['reason']} - {_why(entries_by_pos[top], entry, allow)}"
        changed += 1
    return changed


def _check(
    pos: int, entries: dict[int, dict], graph: SourceGraph, th: dict | None, gain: float
) -> tuple[bool, int | None, float]:
    """``(one honest step, position of its largest source, allowed gain)`` for an entry."""
    entry = entries[pos]
    if th is None or entry["status"] == "missing" or entry.get("nan") or entry.get("inf"):
        return False, None, 0.0
    srcs = graph.sources(pos) or []
    if any(p not in entries or p == pos for p in srcs):
        return False, None, 0.0
    cond = max(1.0, graph.cond(pos))
    local = LOCAL_ROUNDINGS * registry().unit_roundoff(th.get("class")) * cond
    if entry.get("floored") and not any(entries[p].get("floored") for p in srcs):
        # judged against its floor: its error, relative to its own size, must be what one
        # step makes of its sources' (the cancellation is in the step's cond)
        own = _norm(graph.records.get(pos))
        if not own:
            return True, None, gain * cond  # a chain starts here; its verdict stands
        entry = {
            **entry,
            "scale_err": None,
            "floored": False,
            "rel_err": entry["rel_err"] * float(th.get("norm_floor") or 0.0) / own,
        }
    ok, top = _step(entry, [entries[p] for p in srcs], gain * cond, local, th.get("rel_err_max"))
    return ok, (srcs[top] if top is not None else None), gain * cond


_LOW = ("bfloat16", "float16", "hf32")


def trace_nonfinite(entries_by_pos: dict[int, dict], records_by_pos: dict[int, dict]) -> dict | None:
    """Name where NaN/Inf the reference does not hold were made: entries whose sources
    are finite in the target. In a lower-precision class that is a range
    breakdown of the step (cause ``range``: an intermediate leaves the dtype's range -
    torch's float16 LayerNorm backward over a constant row computes 1/sqrt(eps) = 1e6),
    not a difference in what the port computes; later entries carry it (cause
    ``carried``). Entries are annotated in place; returns the first origin or None."""
    graph = SourceGraph(records_by_pos, entries_by_pos)
    origin = None
    for pos, entry in entries_by_pos.items():
        if entry["status"] != "fail" or "NaN/Inf" not in entry["reason"]:
            continue
        srcs = graph.sources(pos) or []
        bad = [
            entries_by_pos[p]
            for p in srcs
            if p in entries_by_pos
            and p != pos
            and (entries_by_pos[p].get("nan") or entries_by_pos[p].get("inf"))
        ]
        if bad:
            entry["cause"] = "carried"
            entry["reason"] += f" - carried from {bad[0]['name']}#{bad[0]['call']}"
            continue
        if not srcs:
            continue
        origin = origin or entry
        if entry.get("class") in _LOW:
            entry["cause"] = "range"
            entry["reason"] += (
                f" - made here from finite inputs: an intermediate of this "
                f"step leaves {entry['dtype']}'s range (the reference stays "
                "finite). A low-precision breakdown, not a difference in "
                "what the port computes: run this step in float32 (autocast "
                "keeps norms and softmax in float32)"
            )
        else:
            entry["cause"] = "made"
            entry["reason"] += " - made here from finite inputs"
    return origin
