"""A torch.profiler (Kineto) trace -> Timeline.

Device ops are the ``kernel``, ``gpu_memcpy`` and ``gpu_memset`` events (NCCL kernels are
communication, with the collective's size from the kernel's ``In msg nelems`` and ``dtype``
where Kineto recorded them); each carries the ``correlation`` of the runtime call that
launched it (``cuda_runtime`` / ``cuda_driver``), which becomes a launch. Host ops are the
``cpu_op`` and ``user_annotation`` events (ProfilerStep#N among them), and the runtime calls
themselves (so ``cudaStreamSynchronize`` and ``cudaDeviceSynchronize`` are seen). The chip
is ``deviceProperties[0].name``, the rank ``distributedInfo.rank``.

A trace of a CPU run has no device ops: the outermost framework ops of each thread stand
for them (core ``CPU``), so the step breakdown and top operators still say where the time
went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migrate.perf.read import jsonstream
from migrate.perf.read.chrome import HostSide, args_of, integer, number, text, times
from migrate.perf.timeline import Timeline

__all__ = ["read_kineto"]

DEVICE_CATEGORIES = {"kernel": "KERNEL", "gpu_memcpy": "MEMCPY", "gpu_memset": "MEMSET"}
RUNTIME_CATEGORIES = {"cuda_runtime", "cuda_driver", "runtime"}
HOST_CATEGORIES = {"cpu_op", "user_annotation", "python_function", *RUNTIME_CATEGORIES}
# Bytes per element of the dtype names NCCL kernels and record_param_comms carry.
DTYPE_BYTES = {
    "Float": 4,
    "Half": 2,
    "BFloat16": 2,
    "Double": 8,
    "Int": 4,
    "Long": 8,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
    "Short": 2,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
}


def _collective_bytes(args: dict) -> float:
    nelems = integer(args.get("In msg nelems"))
    dtype = args.get("dtype")
    size = DTYPE_BYTES.get(dtype, 0) if isinstance(dtype, str) else 0
    return float(max(nelems or 0, 0) * size)


class _Kineto:
    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        self.host = HostSide(tl)

    def meta(self, key: str, value: Any) -> None:
        if key == "deviceProperties" and isinstance(value, list) and value and isinstance(value[0], dict):
            name = value[0].get("name")
            if isinstance(name, str):
                self.tl.chip = name[:128]
                self.tl.device = "gpu"
        elif key == "distributedInfo" and isinstance(value, dict):
            rank, world = integer(value.get("rank")), integer(value.get("world_size"))
            self.tl.rank = rank if rank is not None and 0 <= rank < 1 << 20 else None
            self.tl.world_size = world if world is not None and 0 < world < 1 << 20 else None

    def event(self, event: dict) -> None:
        ph = event.get("ph")
        if ph == "M":
            self.host.meta_event(event)
            return
        if ph != "X":
            return
        cat = event.get("cat")
        if cat not in DEVICE_CATEGORIES and cat not in HOST_CATEGORIES:
            return
        got = times(event, self.host.clock)
        if got is None:
            self.host.bad_events += 1
            return
        start, dur = got
        args = args_of(event)
        if cat in DEVICE_CATEGORIES:
            self._device(event, args, cat, start, dur)
            return
        tid = integer(event.get("tid"))
        tid = 0 if tid is None else tid
        if cat in RUNTIME_CATEGORIES:
            corr = integer(args.get("correlation"))
            if corr is not None:
                self.tl.launches[corr] = (tid, start)
        self.host.host_event(event, start, dur, tid)

    def _device(self, event: dict, args: dict, cat: str, start: float, dur: float) -> None:
        name = text(event.get("name"))
        core = DEVICE_CATEGORIES[cat]
        nbytes = number(args.get("bytes")) or 0.0
        group = ""
        if core == "KERNEL" and name.startswith("nccl"):
            core = "NCCL"
            nbytes = _collective_bytes(args)
            group = text(args.get("Process Group Name"))
        corr = integer(args.get("correlation"))
        stream = integer(args.get("stream"))
        self.tl.device = "gpu"
        self.tl.device_ops.append(
            start=start,
            dur=dur,
            bytes=nbytes,
            stream=-1 if stream is None else stream,
            launch=-1 if corr is None else corr,
            name=name,
            type=_kernel_type(name, args),
            core=core,
            group=group,
        )


def _kernel_type(name: str, args: dict) -> str:
    """A short type for a CUDA kernel: the collective for NCCL, else the kernel's function
    name without template arguments and parameters."""
    if isinstance(args.get("Collective name"), str):
        return args["Collective name"][:64]
    base = name.split("(", 1)[0]
    base = base.split("<", 1)[0].strip()
    if base.startswith("void "):
        base = base[5:]
    return base.rsplit("::", 1)[-1][:128] or name[:128]


def read_kineto(path: Path, progress=None) -> Timeline:
    """The Timeline of the Kineto trace at ``path`` (TraceError if it cannot be read)."""
    tl = Timeline(str(path), "kineto")
    reader = _Kineto(tl)
    counts: dict[str, int] = {}
    for kind, value in jsonstream.items(path, progress, counts):
        if kind == "event":
            reader.event(value)
        else:
            reader.meta(*value)
    reader.host.finish()
    tl.files = [path.name]
    if counts.get("skipped"):
        tl.note(f"{counts['skipped']} entries of traceEvents were not events and were skipped")
    if not len(tl.device_ops):
        tl.device = "cpu"
        tl.note("no device ops (a CPU run): the outermost framework ops of each thread stand for them")
    return tl
