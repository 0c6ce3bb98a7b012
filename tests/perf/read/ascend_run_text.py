"""An ascend_run.Run written as the Ascend PyTorch Profiler text result torch_npu 2.14 writes:
``<name>_ascend_pt/`` with profiler_info_{rank}.json, profiler_metadata.json and
ASCEND_PROFILER_OUTPUT/ (trace_view.json laid out as CANN's timeline writer lays it: Python,
CANN, Ascend Hardware with the collectives' tasks again on their streams, the HCCL process
with a ``Group <g> Communication`` thread and ``Plane <n>`` threads, Overlap Analysis;
kernel_details.csv with its collectives as COMMUNICATION rows; step_trace_time.csv;
communication.json; communication_matrix.json)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ascend_run import FIGURE_HEADER, Run, figure_row

PIDS = {"python": 4242, "cann": 424202, "hardware": 800, "hccl": 900, "overlap": 4242110}
KERNEL_HEADER = [
    "Step Id",
    "Device_id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
]
# torch_npu before 2.1 (msprof-analyze still reads it): no OP State, Task Type for the core
OLD_KERNEL_HEADER = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "Task Type",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Input Shapes",
    "Input Data Types",
]


def ts(ns: int) -> str:
    """A trace timestamp as torch_npu writes it: microseconds, a string with 3 decimals."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def _meta(pid: int, name: str, label: str | None = None, threads: dict[int, str] | None = None) -> list[dict]:
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}]
    if label is not None:
        out.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}})
    for tid, tname in (threads or {}).items():
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": tname}})
    return out


def _x(name: str, pid: str, tid: int, start: int, dur: int, args: dict | None = None, **extra) -> dict:
    """A complete event as torch_npu writes it (ts a string in us, dur in us)."""
    event = {
        "ph": "X",
        "name": name,
        "pid": PIDS[pid],
        "tid": tid,
        "ts": ts(start),
        "dur": dur / 1e3,
        **extra,
    }
    if args is not None:
        event["args"] = args
    return event


def _flow(ph: str, fid: int, pid: str, tid: int, start: int) -> dict:
    return {
        "ph": ph,
        "bp": "e",
        "cat": "async_npu",
        "name": "torch_to_npu",
        "id": fid,
        "pid": PIDS[pid],
        "tid": tid,
        "ts": ts(start),
    }


def _host_and_kernels(run: Run) -> list[dict]:
    ev = []
    for op in run.ops:
        args = {"Sequence number": -1, "Fwd thread id": 0}
        if op.stack:
            args["Call stack"] = ";\r\n".join(op.stack)
        ev.append(_x(op.name, "python", op.tid, op.start, op.end - op.start, args, cat="cpu_op"))
    for k in run.kernels:
        ev.append(
            _x(
                k.name,
                "hardware",
                k.stream,
                k.start,
                k.dur,
                {"Task Type": k.core, "Physic Stream Id": k.stream},
            )
        )
        if k.launcher is not None:
            op = run.ops[k.launcher]
            ev += [
                _flow("s", k.start, "python", op.tid, op.start),
                _flow("f", k.start, "hardware", k.stream, k.start),
            ]
            ev.append(_x("AscendCL@aclnnLaunch", "cann", op.tid, op.start + 1000, 5000, {}))
    for stream, start, dur in run.waits:
        ev.append(
            _x(
                "EVENT_WAIT",
                "hardware",
                stream,
                start,
                dur,
                {"Task Type": "EVENT_WAIT_SQE", "Physic Stream Id": stream},
            )
        )
    return ev


def _collectives(run: Run, groups: list[str]) -> list[dict]:
    """The HCCL process (a Group thread of ops, a Plane thread of tasks per group), and the
    tasks again on the Ascend Hardware streams they ran on."""
    ev = []
    for c in run.collectives:
        g = groups.index(c.group) * 10
        args = {"count": c.count, "data_type": c.dtype, "alg_type": "HD-MESH", "rank_size": 2}
        ev.append(_x(c.name, "hccl", g, c.start, c.dur, args))
        for t in c.tasks:
            args = {
                "task type": t.name,
                "stream id": t.stream,
                "transport type": t.transport,
                "link type": t.link,
                "size(Byte)": t.size,
            }
            ev.append(_x(t.name, "hccl", g + 1 + t.plane, t.start, t.dur, args))
            again = {"Task Type": "SDMA_SQE", "Physic Stream Id": t.stream}
            ev.append(_x(t.name.upper(), "hardware", t.stream, t.start, t.dur, again))
    return ev


def trace_events(run: Run) -> list[dict]:
    ev = _meta(PIDS["python"], "Python", "CPU") + _meta(PIDS["cann"], "CANN", "CPU")
    ev += _meta(PIDS["hardware"], "Ascend Hardware", "NPU")
    groups = sorted({c.group for c in run.collectives})
    threads = {}
    for g, group in enumerate(groups):
        threads[g * 10] = f"Group {group} Communication"
        threads[g * 10 + 1] = "Plane 0"
    ev += _meta(PIDS["hccl"], "HCCL", "NPU", threads)
    ev += _meta(PIDS["overlap"], "Overlap Analysis", "NPU")
    ev += _host_and_kernels(run) + _collectives(run, groups)
    tids = {"Computing": 0, "Communication": 1, "Communication(Not Overlapped)": 2, "Free": 3}
    ev += [_x(kind, "overlap", tids[kind], s, e - s) for kind, s, e in run.overlap()]
    return ev


def _kernel_rows(run: Run, old: bool) -> list[dict]:
    rows = []
    for k in run.kernels:
        row = {
            "Step Id": run.step_of(k.start),
            "Device_id": run.device,
            "Model ID": 4294967295,
            "Task ID": 10,
            "Stream ID": k.stream,
            "Name": k.name,
            "Type": k.type,
            "OP State": k.state,
            "Accelerator Core": k.core,
            "Task Type": k.core,
            "Start Time(us)": ts(k.start) + "\t",
            "Duration(us)": k.dur / 1e3,
            "Wait Time(us)": 0,
            "Block Dim": 24,
            "Mix Block Dim": 0,
            "Input Shapes": f'"{k.shapes}"',
            "Input Data Types": k.dtypes,
            "Input Formats": "ND;ND",
            "Output Shapes": '"4096,4096"',
            "Output Data Types": "FLOAT16",
            "Output Formats": "ND",
        }
        rows.append(row)
    for c in run.collectives:
        rows.append(
            {
                "Step Id": run.step_of(c.start),
                "Device_id": run.device,
                "Model ID": 4294967295,
                "Task ID": "N/A",
                "Stream ID": "N/A",
                "Name": c.name,
                "Type": "hcom_allReduce_",
                "OP State": "N/A",
                "Accelerator Core": "COMMUNICATION",
                "Task Type": "COMMUNICATION",
                "Start Time(us)": ts(c.start) + "\t",
                "Duration(us)": c.dur / 1e3,
                "Wait Time(us)": 0,
                "Block Dim": 0,
            }
        )
    return rows


def write_kernel_details(run: Run, path: Path, old: bool = False, duplicate: int = 0) -> None:
    header = OLD_KERNEL_HEADER if old else KERNEL_HEADER
    rows = _kernel_rows(run, old)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows + rows[:duplicate])


def write_step_trace(run: Run, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Device_id", "Step", *FIGURE_HEADER])
        for f in run.step_figures():
            w.writerow([run.device, f["step"], *figure_row(f)])


def matrix(run: Run) -> dict:
    """communication_matrix.json: per step, each collective type's top1 and total entries; a
    rank's links to itself (LOCAL: how the cluster tool maps local to global ranks) and to its
    next peer (its HCCS transfers), local ranks being the global ones in a one-group job."""
    out: dict[str, dict] = {}
    peer, me = (run.rank + 1) % run.world, run.rank
    for c in run.collectives:
        step = out.setdefault(f"step{run.step_of(c.start)}", {"collective": {}, "p2p": {}})
        moved = [t for t in c.tasks if t.name == "Memcpy" and t.link == "HCCS"]
        size, ms = sum(t.size for t in moved) / 1e6, sum(t.dur for t in moved) / 1e6
        links = {
            f"{me}-{me}": {
                "Transport Type": "LOCAL",
                "Transit Size(MB)": 0.004096,
                "Transit Time(ms)": 0.0005,
            },
            f"{me}-{peer}": {"Transport Type": "HCCS", "Transit Size(MB)": size, "Transit Time(ms)": ms},
        }
        for link in links.values():
            ratio = link["Transit Size(MB)"] / link["Transit Time(ms)"]
            link.update({"Bandwidth(GB/s)": round(ratio, 4), "Op Name": c.name})
        step["collective"][f"allreduce-top1@{c.group}"] = {k: dict(v) for k, v in links.items()}
        total = step["collective"].setdefault(f"allreduce-total@{c.group}", {})
        for key, link in links.items():
            got = total.setdefault(key, {**link, "Transit Size(MB)": 0, "Transit Time(ms)": 0})
            got["Transit Size(MB)"] += link["Transit Size(MB)"]
            got["Transit Time(ms)"] += link["Transit Time(ms)"]
    return out


def write_text(
    run: Run,
    root: Path,
    name: str = "run",
    old_kernels: bool = False,
    duplicate: int = 0,
    files: tuple[str, ...] = ("trace", "kernels", "steps", "communication", "matrix"),
) -> Path:
    result = root / f"{name}_{run.rank}_ascend_pt"
    out = result / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (result / f"profiler_info_{run.rank}.json").write_text(json.dumps({"rank_id": run.rank}))
    (result / "profiler_metadata.json").write_text(json.dumps({"ENV_VARIABLES": run.env}))
    if "trace" in files:
        (out / "trace_view.json").write_text(json.dumps(trace_events(run)))
    if "kernels" in files:
        write_kernel_details(run, out / "kernel_details.csv", old_kernels, duplicate)
    if "steps" in files:
        write_step_trace(run, out / "step_trace_time.csv")
    if "communication" in files:
        (out / "communication.json").write_text(json.dumps(run.communication()))
    if "matrix" in files:
        (out / "communication_matrix.json").write_text(json.dumps(matrix(run)))
    return result
