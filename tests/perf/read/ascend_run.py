"""One small Ascend training run, described once: steps, framework ops, kernels, collectives
and their HCCL tasks. ascend_run_text.py writes it as an Ascend PyTorch Profiler text result,
ascend_run_db.py as the .db export, so a test can check that both read the same.

The figures the profiler derives (step_trace_time, the overlap tracks, communication.json)
are computed here the way torch_npu and CANN compute them, from the description alone and
without the package's readers: a test comparing a reader with them is not comparing the
reader with itself.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

NS = 1_000_000_000  # the run starts at 1 s of the profiler's clock (ns)


@dataclass
class TorchOp:
    name: str
    start: int  # ns
    end: int
    tid: int = 100
    stack: list[str] = field(default_factory=list)  # innermost first
    shapes: str = ""
    dtypes: str = ""


@dataclass
class Kernel:
    name: str
    type: str
    core: str  # Accelerator Core
    start: int
    dur: int
    stream: int = 3
    launcher: int | None = None  # index into Run.ops
    shapes: str = ""
    dtypes: str = ""
    state: str = "static"


@dataclass
class Task:
    """An HCCL task of a collective (a plane's event)."""

    name: str  # Memcpy, Reduce_Inline, Notify_Wait, RDMASend
    start: int
    dur: int
    transport: str = "SDMA"
    link: str = "HCCS"
    size: int = 0
    stream: int = 9
    plane: int = 0


@dataclass
class Collective:
    name: str
    group: str
    start: int
    dur: int
    count: int
    dtype: str = "FP32"
    tasks: list[Task] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + self.dur


@dataclass
class Run:
    rank: int = 0
    world: int = 2  # ranks of the (one) communication group
    steps: list[tuple[int, int, int]] = field(default_factory=list)  # (id, start ns, end ns)
    ops: list[TorchOp] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    collectives: list[Collective] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    chip: str = "Ascend910B3"
    device: int = 0
    pid: int = 4242
    waits: list[tuple[int, int, int]] = field(default_factory=list)  # EVENT_WAIT tasks: (stream, start, dur)

    # -- what the profiler derives ----------------------------------------------------------
    def step_of(self, t: int) -> int | None:
        return next((sid for sid, a, b in self.steps if a <= t < b), None)

    def step_figures(self) -> list[dict[str, float]]:
        """step_trace_time.csv's figures (us) per step: computing is the union of the step's
        kernels, communication the union of its collectives, free the rest of the step."""
        out = []
        for sid, a, b in self.steps:
            comp = union([(k.start, k.start + k.dur) for k in self.kernels if a <= k.start < b])
            comm = union([(c.start, c.end) for c in self.collectives if a <= c.start < b])
            exposed = length(subtract(comm, comp))
            busy = length(union(comp + comm))
            out.append(
                {
                    "step": sid,
                    "computing": length(comp) / 1e3,
                    "communication_not_overlapped": exposed / 1e3,
                    "overlapped": (length(comm) - exposed) / 1e3,
                    "communication": length(comm) / 1e3,
                    "free": (b - a - busy) / 1e3,
                }
            )
        return out

    def overlap(self) -> list[tuple[str, int, int]]:
        """The Overlap Analysis tracks: (kind, start ns, end ns)."""
        out = []
        for _, a, b in self.steps:
            comp = union([(k.start, k.start + k.dur) for k in self.kernels if a <= k.start < b])
            comm = union([(c.start, c.end) for c in self.collectives if a <= c.start < b])
            out += [("Computing", s, e) for s, e in comp]
            out += [("Communication", s, e) for s, e in comm]
            out += [("Communication(Not Overlapped)", s, e) for s, e in subtract(comm, comp)]
            out += [("Free", s, e) for s, e in subtract([(a, b)], union(comp + comm))]
        return out

    def communication(self) -> dict[str, dict]:
        """communication.json as CANN's CommunicationParser writes it, per step (MB = 10**6 B)."""
        doc: dict[str, dict] = {}
        for c in self.collectives:
            sid = self.step_of(c.start)
            step = doc.setdefault(f"step{sid}" if sid is not None else "step", {"collective": {}, "p2p": {}})
            kind = "p2p" if c.name.lower().startswith(("hcom_send", "hcom_receive")) else "collective"
            step[kind][f"{c.name}@{c.group}"] = op_info(c)
        for step in doc.values():
            for ops in step.values():
                if ops:
                    ops["Total Op Info"] = total_info(list(ops.values()))
        return doc


# The figure columns of step_trace_time.csv and msprof-analyze's cluster files, in order.
FIGURE_HEADER = [
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
]


def figure_row(f: dict) -> list:
    """One step's FIGURE_HEADER values (no stage, bubble or preparing time in these runs)."""
    exposed = f["communication_not_overlapped"]
    return [f["computing"], exposed, f["overlapped"], f["communication"], f["free"], 0, 0, exposed, 0]


def union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def subtract(spans: list[tuple[int, int]], minus: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for s, e in spans:
        cur = s
        for ms, me in minus:
            if me <= cur or ms >= e:
                continue
            if ms > cur:
                out.append((cur, ms))
            cur = max(cur, me)
        if cur < e:
            out.append((cur, e))
    return out


def length(spans: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in spans)


def link_key(link: str) -> str:
    return "HCCS" if link == "HCCS_SW" else link if link in ("HCCS", "PCIE", "SIO") else "SDMA"


def op_info(c: Collective) -> dict:
    """One op of communication.json (CANN: op_time_parser, op_bandwidth_parser)."""
    transit = wait = sync = 0.0
    seen_transit = False
    links: dict[str, dict] = {
        k: {"size": 0.0, "ms": 0.0, "dist": defaultdict(lambda: [0, 0.0])} for k in LINKS
    }
    for t in sorted(c.tasks, key=lambda t: t.start):
        ms = t.dur / 1e6
        if t.transport == "SDMA" and t.name in ("Memcpy", "Reduce_Inline") and t.link != "ON_CHIP":
            seen_transit = True
            transit += ms
            got = links[link_key(t.link)]
        elif t.transport == "RDMA" and t.size > 0:
            seen_transit = True
            transit += ms
            got = links["RDMA"]
        else:
            if t.name == "Notify_Wait":
                wait += ms
                sync += 0.0 if seen_transit else ms
            continue
        got["size"] += t.size / 1e6
        got["ms"] += ms
        got["dist"][t.size / 1e6][0] += 1
        got["dist"][t.size / 1e6][1] += ms
    for part in ("HCCS", "PCIE", "SIO"):
        links["SDMA"]["size"] += links[part]["size"]
        links["SDMA"]["ms"] += links[part]["ms"]
    elapse = c.dur / 1e6
    return {
        "Communication Time Info": {
            "Start Timestamp(us)": c.start / 1e3,
            "Elapse Time(ms)": elapse,
            "Transit Time(ms)": transit,
            "Wait Time(ms)": wait,
            "Synchronization Time(ms)": sync,
            "Idle Time(ms)": elapse - transit - wait,
            "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit else 0,
            "Synchronization Time Ratio": round(sync / (sync + transit), 4) if sync + transit else 0,
        },
        "Communication Bandwidth Info": {
            k: {
                "Transit Size(MB)": v["size"],
                "Transit Time(ms)": v["ms"],
                "Bandwidth(GB/s)": round(v["size"] / v["ms"], 4) if v["ms"] else 0,
                "Large Packet Ratio": 0.0,
                "Size Distribution": {} if k == "SDMA" else {str(s): d for s, d in v["dist"].items()},
            }
            for k, v in links.items()
        },
    }


LINKS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")


def total_info(ops: list[dict]) -> dict:
    """The writer's "Total Op Info": a sum, which a reader must not count again."""
    times: dict[str, float] = defaultdict(float)
    bands: dict[str, dict] = {}
    for op in ops:
        for k, v in op["Communication Time Info"].items():
            if "Ratio" not in k and k != "Start Timestamp(us)":
                times[k] += v
        for link, v in op["Communication Bandwidth Info"].items():
            got = bands.setdefault(
                link, {"Transit Time(ms)": 0, "Transit Size(MB)": 0, "Size Distribution": {}}
            )
            got["Transit Time(ms)"] += v["Transit Time(ms)"]
            got["Transit Size(MB)"] += v["Transit Size(MB)"]
    return {"Communication Time Info": dict(times), "Communication Bandwidth Info": bands}


def _compute(run: Run, base: int) -> None:
    """A step's framework ops and the kernels they launch (a matmul, an add, a cast on the
    AI CPU), a host sync and a stream wait."""
    square, half = "4096,4096;4096,4096", "FLOAT16;FLOAT16"
    work = [  # (op, its source line, kernel name, type, core, kernel start, duration, shapes, dtypes)
        (
            "aten::mm",
            "train.py(12): forward",
            "aclnnMm_MatMulV3Common_MatMulV3",
            "MatMulV3",
            "AI_CORE",
            1_000_000,
            900_000,
            square,
            half,
        ),
        (
            "aten::add",
            "train.py(13): forward",
            "aclnnAdd_AddAiCore_Add",
            "Add",
            "AI_VECTOR_CORE",
            2_000_000,
            300_000,
            square,
            half,
        ),
        (
            "aten::sum",
            "train.py(14): forward",
            "aclnnReduceSum_CastAiCpu_Cast",
            "Cast",
            "AI_CPU",
            2_500_000,
            400_000,
            "4096",
            "INT64",
        ),
    ]
    for k, (op, line, name, kind, core, start, dur, shapes, dtypes) in enumerate(work):
        at = base + 100_000 + 300_000 * k
        stack = [line, "train.py(30): main"] if op == "aten::mm" else [line]
        run.ops.append(TorchOp(op, at, at + 200_000 if k == 0 else at + 100_000, stack=stack))
        run.kernels.append(
            Kernel(
                name, kind, core, base + start, dur, launcher=len(run.ops) - 1, shapes=shapes, dtypes=dtypes
            )
        )
    run.ops.append(TorchOp("aten::item", base + 8_000_000, base + 8_200_000, stack=["train.py(40): main"]))
    run.waits.append((3, base + 2_950_000, 40_000))


def sample_run(
    rank: int = 0,
    hccs_slow: float = 1.0,
    sizes: tuple[int, ...] = (3072, 3072, 3000),
    world: int = 2,
    collective_ns: int = 1_000_000,
) -> Run:
    """Two steps of a data-parallel training step: matmuls, vector ops, an AI CPU cast, two
    all-reduces per step (HCCS + PCIE transfers of ``sizes`` bytes, notify waits), a wait
    task; ``hccs_slow`` stretches this rank's HCCS transfers (a slow link); ``collective_ns``
    is how long each all-reduce takes on this rank (shorter on the rank the others wait for)."""
    run = Run(rank=rank, world=world, env={"TASK_QUEUE_ENABLE": "2", "HCCL_CONNECT_TIMEOUT": "1200"})
    for sid in (1, 2):
        base = NS + (sid - 1) * 10_000_000  # 10 ms steps
        run.steps.append((sid, base, base + 10_000_000))
        run.ops.append(TorchOp(f"ProfilerStep#{sid}", base, base + 9_000_000))
        _compute(run, base)
        for k, start in enumerate((base + 3_000_000, base + 6_000_000)):
            tasks = [Task("Notify_Wait", start + 10_000, 100_000)]
            t = start + 120_000
            for j, size in enumerate(sizes):
                link = "HCCS" if j % 2 == 0 else "PCIE"
                dur = int(2_000 * (hccs_slow if link == "HCCS" else 1.0))
                tasks.append(Task("Memcpy", t, dur, link=link, size=size))
                t += dur + 1_000
            tasks.append(Task("Memcpy", t, 500, link="ON_CHIP", size=4096))  # a local copy: not a transfer
            name = f"hcom_allReduce__{sid}{k}1_0_1"
            run.collectives.append(Collective(name, "12345", start, collective_ns, count=1024, tasks=tasks))
    return run
