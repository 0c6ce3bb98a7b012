"""An Ascend PyTorch Profiler result (a ``*_ascend_pt`` folder) -> Timeline.

Reads the files discovery found, timeline first (trace_view.json gives the host side, the
tasks and their launches, the overlap tracks, the collectives and their tasks), then the CSVs
that enrich or stand in for it (ascend_tables.py), communication.json and
communication_matrix.json (ascend_comm.py: the profiler's own per-collective analysis, which
replaces what the trace's HCCL tasks gave), then ``profiler_metadata.json`` (the
environment variables the profiler recorded, the CANN and torch_npu versions). A partial
result is normal input: what is there is read, and a note says which of the usual files are
missing and what that leaves out.
"""

from __future__ import annotations

import json
from pathlib import Path

from migrate.core.fileio import read_head
from migrate.perf.read import ascend_tables
from migrate.perf.read.ascend_comm import read_communication, read_communication_matrix
from migrate.perf.read.ascend_trace import read_trace_view
from migrate.perf.read.chrome import Clock
from migrate.perf.read.discover import Source
from migrate.perf.read.jsonstream import TraceError
from migrate.perf.timeline import Timeline

__all__ = ["read_ascend"]

# What a missing file leaves out, for the note.
MISSING = {
    "trace_view": "host ops, syncs, launches and the overlap tracks",
    "kernel_details": "operator types, cores, shapes and dtypes",
    "step_trace_time": "the profiler's own step breakdown",
}


def _metadata(path: Path, tl: Timeline) -> None:
    try:
        data = json.loads(read_head(path, 1 << 20) or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        tl.note("profiler_metadata.json is not JSON: not read")
        return
    if not isinstance(data, dict):
        return
    env = data.get("ENV_VARIABLES")
    if isinstance(env, dict):
        tl.environment.update({str(k)[:128]: str(v)[:512] for k, v in list(env.items())[:256]})
    for key in ("CANN_VERSION", "cann_version", "torch_npu_version", "torch_version"):
        if isinstance(data.get(key), str):
            tl.facts[key.lower()] = data[key][:64]


def read_ascend(src: Source, progress=None) -> Timeline:
    """The Timeline of the Ascend result ``src`` (TraceError names the file that failed)."""
    tl = Timeline(str(src.path), "ascend", device="npu", rank=src.rank)
    files = src.files
    clock = Clock()
    steps = [
        ("trace_view", lambda p: read_trace_view(p, tl, progress, clock)),
        ("kernel_details", lambda p: ascend_tables.read_kernel_details(p, tl, clock)),
        ("step_trace_time", lambda p: ascend_tables.read_step_trace_time(p, tl)),
        ("op_statistic", lambda p: ascend_tables.read_op_statistic(p, tl)),
        ("operator_details", lambda p: ascend_tables.read_operator_details(p, tl)),
        ("communication", lambda p: read_communication(p, tl)),
        ("communication_matrix", lambda p: read_communication_matrix(p, tl)),
        ("metadata", lambda p: _metadata(p, tl)),
    ]
    for role, read in steps:
        path = files.get(role)
        if path is None:
            continue
        try:
            read(path)
        except TraceError as exc:
            raise TraceError(f"{path.name}: {exc}") from None
        tl.files.append(str(path.relative_to(src.path)) if path.is_relative_to(src.path) else path.name)
    missing = [
        f"{role}.{'json' if role == 'trace_view' else 'csv'} ({what})"
        for role, what in MISSING.items()
        if role not in files
    ]
    if missing:
        tl.note("partial profile: no " + "; no ".join(missing))
    return tl
