"""What `migrate perf` reports, as data: the rows of docs/contracts.md §10.

Every record is a dataclass that ``to_json`` turns into the contract's JSON shape; the
Python API (:func:`migrate.perf.run.analyze`) returns a :class:`Report`, which is truthy
when no finding reaches the gate, like a passing comparison.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Finding", "LinkPair", "LinkRow", "OpRow", "ProfileInfo", "RankResult", "Report", "StepBreakdown"]


@dataclass
class ProfileInfo:
    path: str
    kind: str  # "ascend" | "kineto"
    device: str  # "npu" | "gpu" | "cpu"
    ranks: list[int | None]
    chip: str | None = None
    files: list[str] = field(default_factory=list)


@dataclass
class StepBreakdown:
    """One step of one rank. ``total_us`` = computing + communication not overlapped + free
    (the device's busy and idle time in the step window); ``source`` says where the figures
    come from: ``step_trace_time.csv``, ``overlap tracks`` (Ascend trace_view), ``device ops``
    (intervals of the kernels), ``cluster`` (msprof-analyze cluster_step_trace_time.csv)."""

    rank: int | None
    step: int | None
    total_us: float
    computing_us: float
    communication_not_overlapped_us: float
    free_us: float
    communication_us: float = 0.0  # all communication, overlapped or not
    source: str = ""

    @property
    def free_share(self) -> float:
        return self.free_us / self.total_us if self.total_us > 0 else 0.0

    @property
    def exposed_comm_share(self) -> float:
        return self.communication_not_overlapped_us / self.total_us if self.total_us > 0 else 0.0


@dataclass
class OpRow:
    """Device time of one operator (kernel name grouped by op type and core) on one rank."""

    rank: int | None
    name: str
    type: str
    core: str
    count: int
    total_us: float
    share: float  # of the rank's device op time in the profiled steps


@dataclass
class Finding:
    id: str  # PERFnnn, from data/findings.yaml
    name: str
    kind: str  # compute | host | communication | memory | environment | cluster
    message: str  # one sentence with the numbers
    evidence: dict[str, Any]  # the figures read from the profile behind the message
    fix: str
    saving_us: float | None  # an upper bound of the step time the fix can save (per step)
    locations: list[str] = field(default_factory=list)  # "file:line" where stacks were recorded
    rank: int | None = None
    rule: str | None = None  # the scan rule whose fix makes the change (MIG9xx)
    share: float | None = None  # saving_us over the step time it is judged against


@dataclass
class LinkRow:
    """What one rank moved over one link type (HCCS, PCIE, SIO, SDMA, RDMA) in one
    communication group, summed over the group's collectives: the slow-link figures."""

    group: str
    rank: int
    link: str
    bytes: float
    ms: float

    @property
    def bandwidth_gbs(self) -> float:
        return gbs(self.bytes, self.ms)


@dataclass
class LinkPair:
    """What went from rank ``src`` to rank ``dst`` over one transport in one group (a
    cluster's communication matrix), summed over the group's collectives."""

    group: str
    src: int
    dst: int
    transport: str
    bytes: float
    ms: float

    @property
    def bandwidth_gbs(self) -> float:
        return gbs(self.bytes, self.ms)


def gbs(nbytes: float, ms: float) -> float:
    """Bandwidth in GB/s (10**9 bytes a second, the profiles' unit) of ``nbytes`` in ``ms``."""
    return nbytes / 1e9 / (ms / 1e3) if ms > 0 else 0.0


@dataclass
class RankResult:
    """What one rank's worker hands back: small, whatever the trace's size."""

    profile: ProfileInfo
    rank: int | None
    steps: list[StepBreakdown]
    top_ops: list[OpRow]
    findings: list[Finding]
    notes: list[str]
    framework_ops: dict[str, list[float]] = field(default_factory=dict)  # op -> [count, device us]
    collectives: dict[str, list[float]] = field(default_factory=dict)  # name -> [count, us, bytes]
    device_us: float = 0.0  # device op time in the profiled steps
    links: list[LinkRow] = field(default_factory=list)  # per group and link type (rank: this one)

    @property
    def mean_step_us(self) -> float:
        steps = [s.total_us for s in self.steps if s.total_us > 0]
        return sum(steps) / len(steps) if steps else 0.0


@dataclass
class Report:
    profiles: list[ProfileInfo]
    ranks: list[RankResult]
    findings: list[Finding]
    mfu: dict[str, Any] | None = None
    compare: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    gate: dict[str, Any] | None = None

    @property
    def steps(self) -> list[StepBreakdown]:
        return [s for r in self.ranks for s in r.steps]

    @property
    def top_ops(self) -> list[OpRow]:
        return [o for r in self.ranks for o in r.top_ops]

    def __bool__(self) -> bool:
        return not (self.gate or {}).get("failed")

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": {"name": "ascend-migrate", "command": "perf"},
            "profiles": [asdict(p) for p in self.profiles],
            "steps": [_step_json(s) for s in self.steps],
            "top_ops": [asdict(o) for o in self.top_ops],
            "findings": [asdict(f) for f in self.findings],
            "mfu": self.mfu,
            "compare": self.compare,
            "gate": self.gate,
            "notes": self.notes
            + [f"rank {r.rank}: {n}" if r.rank is not None else n for r in self.ranks for n in r.notes],
        }


def _step_json(step: StepBreakdown) -> dict[str, Any]:
    row = asdict(step)
    row["free_share"] = round(step.free_share, 6)
    return row
