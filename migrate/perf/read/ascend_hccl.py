"""HCCL collectives and their tasks -> ``Timeline.tables["communication"]``, one shape for
every Ascend source (communication.json, the HCCL tasks of trace_view.json, the .db export).

``tables["communication"]`` is ``{"source": file, "ops": [op, ...]}``, one ``op`` per
collective (or P2P op) of the rank:

* ``name``, ``group`` (the communication group: the ``@group`` suffix of communication.json's
  keys, the ``Group <g> Communication`` thread of the trace, ``groupName`` of the .db),
  ``kind`` ("collective" | "p2p", from the name as torch_npu splits them), ``step`` (the
  communication.json step key, None elsewhere), ``start_us`` (as the file wrote it);
* ``elapse_ms``, ``transit_ms``, ``wait_ms``, ``synchronization_ms``, ``idle_ms``: the
  "Communication Time Info" figures (None when the source does not give them);
* ``links``: ``{link type: {"bytes", "ms", "bandwidth_gbs"}}``, the "Communication Bandwidth
  Info" per transport (HCCS, PCIE, SIO, RDMA, and SDMA, which CANN's writer makes the sum of
  HCCS, PCIE and SIO and of SDMA tasks on an unreported link);
* ``sizes``: ``{link type: [(bytes, count, ms), ...]}``, the "Size Distribution": each
  transfer size, how many transfers had it and their time.

Units: the files write MB and GB/s; CANN's writer (msprof ``NumberConstant``:
``COMMUNICATION_B_to_MB = 1000**2``, ``COMMUNICATION_MB_to_GB = 1000``) divides bytes by 10**6,
so ``bytes = MB * 10**6`` here, and ``bandwidth_gbs`` is bytes / 10**9 per second. A transfer
of 3,072 bytes is written 0.003072 MB.

From tasks (:class:`Collectives`), the figures are counted as CANN's communication parser
counts them: a transfer is an SDMA task named ``Memcpy`` or ``Reduce_Inline`` whose link is
not ``ON_CHIP`` (its link type HCCS, PCIE or SIO, ``HCCS_SW`` as HCCS, any other as SDMA),
or an RDMA task of the op with a size; ``wait_ms`` is the ``Notify_Wait`` time, ``transit_ms``
the SDMA transfer time, ``idle_ms`` what is left of the op's time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MB", "Collectives", "kind_of", "link_of", "op_record"]

MB = 1_000_000  # bytes in the "MB" of communication.json (see the module doc)
SDMA_TRANSIT = frozenset({"Memcpy", "Reduce_Inline"})
SDMA_LINKS = ("HCCS", "PCIE", "SIO")
NOTIFY_WAIT = "Notify_Wait"
MAX_OPS = 1_000_000
MAX_SIZES = 4096  # distinct transfer sizes kept per op and link
_P2P = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")


def kind_of(name: str) -> str:
    """ "p2p" for send/receive ops (as torch_npu's CommunicationParser splits them), else
    "collective"."""
    return "p2p" if name.lower().startswith(_P2P) else "collective"


def link_of(link_type: str) -> str:
    """The Bandwidth Info key of an SDMA transfer over ``link_type`` (CANN's
    get_communication_bandwidth_info_type)."""
    if link_type == "HCCS_SW":
        return "HCCS"
    return link_type if link_type in SDMA_LINKS else "SDMA"


def op_record(name: str, group: str, **figures: Any) -> dict[str, Any]:
    """An empty op of ``tables["communication"]``."""
    op: dict[str, Any] = {
        "name": name[:512],
        "group": group[:256],
        "kind": kind_of(name),
        "step": None,
        "start_us": None,
        "elapse_ms": None,
        "transit_ms": None,
        "wait_ms": None,
        "synchronization_ms": None,
        "idle_ms": None,
        "links": {},
        "sizes": {},
    }
    op.update(figures)
    return op


def add_link(op: dict[str, Any], link: str, size: float, ms: float) -> None:
    got = op["links"].setdefault(link, {"bytes": 0.0, "ms": 0.0, "bandwidth_gbs": 0.0})
    got["bytes"] += size
    got["ms"] += ms
    got["bandwidth_gbs"] = got["bytes"] / 1e6 / got["ms"] if got["ms"] > 0 else 0.0


def add_size(op: dict[str, Any], link: str, size: float, count: int, ms: float) -> None:
    """Count ``count`` transfers of ``size`` bytes (``ms`` in all) in the op's distribution."""
    dist = op["sizes"].setdefault(link, {})
    key = round(size)
    got = dist.get(key)
    if got is None:
        if len(dist) >= MAX_SIZES:
            return
        got = dist[key] = [0, 0.0]
    got[0] += count
    got[1] += ms


def finish_sizes(op: dict[str, Any]) -> None:
    """Sizes as sorted (bytes, count, ms) tuples."""
    op["sizes"] = {
        link: [(float(b), int(c), float(ms)) for b, (c, ms) in sorted(dist.items())]
        for link, dist in op["sizes"].items()
        if isinstance(dist, dict)
    }


class Collectives:
    """Collectives seen one by one with their tasks (the trace's HCCL process, the .db's
    COMMUNICATION_OP and COMMUNICATION_TASK_INFO), turned into ``tables["communication"]``."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.dropped = 0

    def add_op(self, name: str, group: str, start_us: float, dur_us: float) -> int:
        """The op's index (-1 past ``MAX_OPS``)."""
        if len(self.ops) >= MAX_OPS:
            self.dropped += 1
            return -1
        self.ops.append(
            op_record(
                name,
                group,
                start_us=start_us,
                elapse_ms=dur_us / 1e3,
                transit_ms=0.0,
                wait_ms=0.0,
                idle_ms=dur_us / 1e3,
            )
        )
        return len(self.ops) - 1

    def add_task(self, index: int, name: str, transport: str, link: str, size: float, dur_us: float) -> None:
        if not 0 <= index < len(self.ops):
            return
        op, ms = self.ops[index], dur_us / 1e3
        if name == NOTIFY_WAIT:
            op["wait_ms"] += ms
        elif transport == "SDMA" and name in SDMA_TRANSIT and link != "ON_CHIP" and size >= 0:
            kind = link_of(link)
            op["transit_ms"] += ms
            add_link(op, kind, size, ms)
            add_size(op, kind, size, 1, ms)
            if kind != "SDMA":
                add_link(op, "SDMA", size, ms)
        elif transport == "RDMA" and size > 0:
            op["transit_ms"] += ms
            add_link(op, "RDMA", size, ms)
            add_size(op, "RDMA", size, 1, ms)
        op["idle_ms"] = max(op["elapse_ms"] - op["transit_ms"] - op["wait_ms"], 0.0)

    def table(self, source: str) -> dict[str, Any]:
        for op in self.ops:
            finish_sizes(op)
        return {"source": source, "ops": self.ops}
