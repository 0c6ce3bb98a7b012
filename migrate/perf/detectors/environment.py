"""PERF401: runtime settings the profile shows, judged by the doctor's runtime-settings
table (migrate/doctor/data/runtime_settings.yaml: one table for both commands).

A variable counts only where the profile recorded it (profiler_metadata.json's
ENV_VARIABLES), or where the table says its events show it (the task queue's
enqueue/dequeue events: ``facts["task_queue"]`` is False when a reader read the framework's
events, trace_view.json or the .db's PYTORCH_API, and found none); a setting the profile says
nothing about is never reported.
"""

from __future__ import annotations

from migrate.doctor.settings import runtime_settings
from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, make
from migrate.perf.model import Finding


@detector("PERF401")
def runtime_settings_finding(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    env, facts = a.tl.environment, a.tl.facts
    slow = []
    for s in runtime_settings():
        if s.observed == "task_queue":
            if facts.get("task_queue") is False:  # framework events read, none of the queue
                slow.append((s, "no enqueue/dequeue events (the task queue is off)"))
        elif s.variable in env and s.slows(env[s.variable]):
            slow.append((s, f"{s.variable}={env[s.variable] or '(unset)'}"))
    if not slow:
        return []
    return [
        make(
            "PERF401",
            f"{len(slow)} runtime setting(s) slow the run: "
            + "; ".join(f"{seen}: {s.why}" for s, seen in slow),
            {
                "settings": [
                    {"variable": s.variable, "seen": seen, "source": s.source.cite()} for s, seen in slow
                ]
            },
            None,
            rank=a.rank,
            settings="; ".join(s.fix for s, _ in slow),
        )
    ]
