"""``communication.json`` and ``communication_matrix.json`` of one rank (ASCEND_PROFILER_OUTPUT)
-> ``Timeline.tables["communication"]`` and ``tables["communication_matrix"]``.

torch_npu writes both from CANN's communication analysis (prof_view/_communication_parser.py):

* communication.json: ``{step: {"collective" | "p2p": {"<op>@<group>": {"Communication Time
  Info": {"Start Timestamp(us)", "Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)",
  "Synchronization Time(ms)", "Idle Time(ms)", ...ratios}, "Communication Bandwidth Info":
  {link type: {"Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Large Packet
  Ratio", "Size Distribution": {"<size MB>": [count, total ms]}}}}, "Total Op Info": the
  writer's own sum}}}``. Older writers have no step level, or no p2p/collective level: the
  ops are found wherever a mapping holds a "Communication ... Info" member (at most three
  levels down). "Total Op Info" (a sum) is skipped, so nothing counts twice. Each op becomes
  one op of ``tables["communication"]`` (shape and units: ascend_hccl.py).
* communication_matrix.json: ``{step: {"collective" | "p2p": {"<type>-<stat>@<group>":
  {"<src>-<dst>": {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)",
  "Op Name"}}}}}`` where ``stat`` is top1 / middle / bottom1-3 / total; the ``total`` entries
  (one per op type and group: every op of that type summed) become rows ``{"op", "group",
  "step", "src", "dst", "transport", "bytes", "ms"}`` of ``tables["communication_matrix"]``
  (src and dst are the ranks within the group, as the file writes them).

A value that is not a finite number reads as missing; a member of the wrong type is
skipped and counted in a note; a file that is not JSON is a TraceError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migrate.perf.read.ascend_hccl import MB, add_link, add_size, finish_sizes, op_record
from migrate.perf.read.chrome import integer, number
from migrate.perf.read.jsonstream import TraceError, load_json
from migrate.perf.timeline import Timeline

__all__ = ["communication_ops", "matrix_rows", "read_communication", "read_communication_matrix"]

TIME_INFO = "Communication Time Info"
BANDWIDTH_INFO = "Communication Bandwidth Info"
TOTAL = "Total Op Info"
KINDS = ("collective", "p2p")
TIMES = {
    "elapse_ms": "Elapse Time(ms)",
    "transit_ms": "Transit Time(ms)",
    "wait_ms": "Wait Time(ms)",
    "synchronization_ms": "Synchronization Time(ms)",
    "idle_ms": "Idle Time(ms)",
}
MAX_OPS = 1_000_000
MAX_DEPTH = 3


def _finite(value: Any) -> float | None:
    got = number(value)
    return got if got is not None and got >= 0 else None


def _links(op: dict[str, Any], info: Any, bad: list[int]) -> None:
    if not isinstance(info, dict):
        bad[0] += 1
        return
    for link, figures in list(info.items())[:64]:
        if not isinstance(figures, dict):
            bad[0] += 1
            continue
        link = str(link)[:32]
        size = _finite(figures.get("Transit Size(MB)")) or 0.0
        ms = _finite(figures.get("Transit Time(ms)")) or 0.0
        if size or ms:
            add_link(op, link, size * MB, ms)
        dist = figures.get("Size Distribution")
        for key, value in dist.items() if isinstance(dist, dict) else ():
            mb = _finite(key)
            if mb is None or not isinstance(value, list) or len(value) < 2:
                bad[0] += 1
                continue
            count, total = integer(value[0]), _finite(value[1])
            if count is not None and count > 0:
                add_size(op, link, mb * MB, count, total or 0.0)


def _op(key: str, info: dict[str, Any], step: str | None, kind: str | None, bad: list[int]) -> dict:
    name, _, group = key.partition("@")
    op = op_record(name, group)
    if kind in KINDS:
        op["kind"] = kind
    op["step"] = step
    times = info.get(TIME_INFO)
    if isinstance(times, dict):
        op["start_us"] = number(times.get("Start Timestamp(us)"))
        for field, column in TIMES.items():
            op[field] = _finite(times.get(column))
    elif times is not None:
        bad[0] += 1
    if BANDWIDTH_INFO in info:
        _links(op, info[BANDWIDTH_INFO], bad)
    finish_sizes(op)
    return op


def _is_op(value: Any) -> bool:
    return isinstance(value, dict) and (TIME_INFO in value or BANDWIDTH_INFO in value)


def communication_ops(doc: Any, bad: list[int]) -> list[dict[str, Any]]:
    """The ops of a communication.json document in file order (see the module doc);
    ``bad[0]`` counts members skipped for their type."""
    out: list[dict[str, Any]] = []
    _walk(doc, 0, None, None, out, bad)
    return out


def _walk(node: Any, depth: int, step: str | None, kind: str | None, out: list, bad: list[int]) -> None:
    if not isinstance(node, dict):
        bad[0] += 1
        return
    for key, value in node.items():
        if len(out) >= MAX_OPS:
            return
        key = str(key)
        if key.startswith(TOTAL):
            continue
        if _is_op(value):
            out.append(_op(key, value, step, kind, bad))
        elif isinstance(value, dict) and depth < MAX_DEPTH:
            if key in KINDS:
                _walk(value, depth + 1, step, key, out, bad)
            else:
                _walk(value, depth + 1, key[:64], kind, out, bad)
        else:
            bad[0] += 1


def read_communication(path: Path, tl: Timeline) -> None:
    """communication.json -> ``tl.tables["communication"]`` (see the module doc)."""
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise TraceError("not a mapping of steps to communication ops")
    bad = [0]
    ops = communication_ops(doc, bad)
    if len(ops) >= MAX_OPS:
        tl.note(f"communication.json: only the first {MAX_OPS:,} ops were read")
    if bad[0]:
        tl.note(f"communication.json: {bad[0]} member(s) of an unexpected type were skipped")
    tl.tables["communication"] = {"source": "communication.json", "ops": ops}


def matrix_rows(doc: Any, bad: list[int]) -> list[dict[str, Any]]:
    """The ``total`` link rows of a communication_matrix.json document."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[Any, int, str | None]] = [(doc, 0, None)]
    while stack and len(out) < MAX_OPS:
        node, depth, step = stack.pop()
        if not isinstance(node, dict):
            bad[0] += 1
            continue
        for key, value in node.items():
            key = str(key)
            if not isinstance(value, dict):
                bad[0] += 1
            elif "@" in key and _is_links(value):
                op, _, group = key.partition("@")
                if op.endswith("-total") or "-" not in op:
                    out.extend(_link_rows(op.removesuffix("-total"), group, step, value, bad))
            elif depth < MAX_DEPTH:
                stack.append((value, depth + 1, step if key in KINDS else key[:64]))
    return out[:MAX_OPS]


def _is_links(value: dict) -> bool:
    return any(isinstance(v, dict) and "Transport Type" in v for v in value.values())


def _link_rows(op: str, group: str, step: str | None, links: dict, bad: list[int]) -> list[dict]:
    rows = []
    for pair, figures in links.items():
        src, _, dst = str(pair).partition("-")
        a, b = integer(src), integer(dst)
        if a is None or b is None or not isinstance(figures, dict):
            bad[0] += 1
            continue
        rows.append(
            {
                "op": op[:128],
                "group": group[:256],
                "step": step,
                "src": a,
                "dst": b,
                "transport": str(figures.get("Transport Type", ""))[:32],
                "bytes": (_finite(figures.get("Transit Size(MB)")) or 0.0) * MB,
                "ms": _finite(figures.get("Transit Time(ms)")) or 0.0,
            }
        )
    return rows


def read_communication_matrix(path: Path, tl: Timeline) -> None:
    """communication_matrix.json -> ``tl.tables["communication_matrix"]``."""
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise TraceError("not a mapping of steps to communication links")
    bad = [0]
    tl.tables["communication_matrix"] = matrix_rows(doc, bad)
    if bad[0]:
        tl.note(f"communication_matrix.json: {bad[0]} member(s) of an unexpected type were skipped")
