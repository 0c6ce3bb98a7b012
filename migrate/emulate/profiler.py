"""torch_npu.profiler: the names a training script uses, as a profiler that records which
steps it saw (in the run's report) and writes no trace: kernel timings do not exist here.
Also torch_npu.utils.profiler.Profile, the step-window profiler Ascend ModelZoo scripts
call (``Profile(start_step, profile_type=...)``, ``start()``/``end()`` around each step)."""

from __future__ import annotations

import enum
import sys


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


_PROFILE_ARGS = {
    "TORCH": {"enabled", "use_cuda", "record_shapes", "with_flops", "profile_memory"}
    | {"with_stack", "use_kineto", "use_cpu", "use_npu_simple"},
    "ASCEND_PROFILER": {"activities", "schedule", "record_shapes", "profile_memory", "with_stack"},
}


class _Profile:
    """torch_npu 2.14.0's utils.profiler.Profile, less the trace: profiling is on when
    ``profile_type`` is "TORCH" or "ASCEND_PROFILER" (other keyword arguments checked as
    there); ``start``/``end`` must alternate; the ``end`` of step ``start_step`` of an
    enabled profile ends the program with ``sys.exit()``, as torch_npu's does once it has
    written the trace (written nothing here: the report says so)."""

    def __init__(
        self,
        start_step=10,
        save_path="./npu_profiling",
        profile_type=None,
        use_npu=True,
        record_shape=True,
        experimental_config=None,
        **kwargs,
    ):
        self.step_count, self.count = 0, 0
        self.start_step, self.save_path, self.profile_type = start_step, save_path, profile_type
        self.use_npu, self.record_shape = use_npu, record_shape
        self.experimental_config = experimental_config
        self.enable = profile_type in _PROFILE_ARGS
        if self.enable and not set(kwargs) <= _PROFILE_ARGS[profile_type]:
            raise ValueError(f"Args '{kwargs.keys()}' invaild, expect args '{_PROFILE_ARGS[profile_type]}' .")

    def __del__(self):
        if self.count != 0:
            self.end()

    def start(self) -> None:
        if self.count != 0:
            raise RuntimeError("start interface can only be called once")
        self.count += 1
        if self.enable:
            self.step_count += 1
            if self.step_count == self.start_step:
                from migrate.emulate.monitor import record_note

                record_note("torch_npu.utils.profiler.Profile ran as a no-op: no trace is written")

    def end(self) -> None:
        if self.count == 0:
            raise RuntimeError("start interface must be called after end")
        self.count = 0
        if self.enable and self.step_count == self.start_step:
            from migrate.emulate.monitor import record_note

            record_note(f"torch_npu.utils.profiler.Profile ended the program after step {self.start_step}")
            sys.exit()


_PROFILES: dict[type, _Profile] = {}


def Profile(*args, **kwargs) -> _Profile:  # noqa: N802 - torch_npu's name
    """torch_npu's ``Profile`` is a singleton factory: the first call's arguments hold."""
    if _Profile not in _PROFILES:
        _PROFILES[_Profile] = _Profile(*args, **kwargs)
    return _PROFILES[_Profile]


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
