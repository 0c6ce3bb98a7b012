"""torch_npu.profiler: the names a training script uses, as a profiler that records which
steps it saw (in the run's report) and writes no trace: kernel timings do not exist here."""

from __future__ import annotations

import enum


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel:
    Level_none, Level0, Level1, Level2 = "Level_none", "Level0", "Level1", "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    ResourceConflictRatio = "ResourceConflictRatio"
    MemoryUB = "MemoryUB"
    L2Cache = "L2Cache"


class ExportType:
    Text, Db = "text", "db"


class _ExperimentalConfig:
    def __init__(self, **kwargs):
        self.options = kwargs


def schedule(wait=0, warmup=0, active=1, repeat=0, skip_first=0):
    def action(step: int) -> str:
        return "record" if step >= skip_first + wait + warmup else "wait"

    return action


def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, **_kwargs):
    def handler(prof) -> None:
        prof.traces_requested += 1

    return handler


class profile:  # noqa: N801 - torch_npu's name
    def __init__(
        self,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        **_kwargs,
    ):
        self.on_trace_ready = on_trace_ready
        self.steps = 0
        self.traces_requested = 0

    def start(self):
        from migrate.emulate.monitor import record_note

        record_note("torch_npu.profiler.profile ran as a no-op: no trace is written")
        return self

    def stop(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def step(self):
        self.steps += 1
        from migrate.emulate.monitor import RECORD

        rec = RECORD["current"]
        if rec is not None:
            rec.perf.boundary()  # a step of the run's performance section (emulate/perf.py)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def key_averages(self, *a, **k):
        return []

    def export_chrome_trace(self, path):
        pass


def supported_activities():
    return [ProfilerActivity.CPU, ProfilerActivity.NPU]


EXPORTS = {
    name: obj
    for name, obj in dict(globals()).items()
    if name
    in {
        "ProfilerActivity",
        "ProfilerLevel",
        "AiCMetrics",
        "ExportType",
        "_ExperimentalConfig",
        "schedule",
        "tensorboard_trace_handler",
        "profile",
        "supported_activities",
    }
}
