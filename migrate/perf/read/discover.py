"""PATH... -> the profiles they hold (:class:`Source`), one per rank where a run has several.

What is recognised, in a folder at any depth (up to ``MAX_DEPTH``) or given directly:

* an Ascend PyTorch Profiler result: a ``*_ascend_pt`` folder (or any folder) holding
  ``ASCEND_PROFILER_OUTPUT/`` with ``trace_view.json``, ``kernel_details.csv``,
  ``step_trace_time.csv``, ``op_statistic.csv``, ``operator_details.csv``,
  ``communication.json``, ``communication_matrix.json``, memory CSVs, or the SQLite
  ``ascend_pytorch_profiler[_{rank}].db`` export (with ``analysis.db`` beside it);
  ``profiler_info*.json`` beside it gives the rank (else the .db's name), ``profiler_metadata.json``
  the environment;
* msprof's own export, ``msprof_{timestamp}.db``, at the top of a ``PROF_*`` folder or in its
  ``mindstudio_profiler_output/`` (nothing else of a PROF_* folder is read), or given by name;
* a torch.profiler (Kineto) trace, ``*.pt.trace.json`` or ``*.json`` with ``traceEvents``,
  gzip'd or not;
* msprof-analyze cluster output: ``cluster_analysis_output/`` with
  ``cluster_step_trace_time.csv``, ``cluster_communication.json``,
  ``cluster_communication_matrix.json`` or ``cluster_analysis.db``.

A given file of an Ascend result stands for its result. The walk never follows symlinks
out of the given folder, skips the raw ``PROF_*`` and ``FRAMEWORK`` data inside a result,
and stops with an error past ``MAX_ENTRIES`` names.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from migrate.core import reads
from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.fileio import read_head

__all__ = ["ASCEND_FILES", "Source", "discover"]

MAX_DEPTH = 8
MAX_ENTRIES = 200_000
OUTPUT = "ASCEND_PROFILER_OUTPUT"
# The files of ASCEND_PROFILER_OUTPUT that are read, by role.
ASCEND_FILES = {
    "trace_view": "trace_view.json",
    "kernel_details": "kernel_details.csv",
    "step_trace_time": "step_trace_time.csv",
    "op_statistic": "op_statistic.csv",
    "operator_details": "operator_details.csv",
    "communication": "communication.json",
    "communication_matrix": "communication_matrix.json",
    "operator_memory": "operator_memory.csv",
    "memory_record": "memory_record.csv",
    "npu_module_mem": "npu_module_mem.csv",
}
CLUSTER_FILES = {
    "cluster_step_trace_time": "cluster_step_trace_time.csv",
    "cluster_communication": "cluster_communication.json",
    "cluster_communication_matrix": "cluster_communication_matrix.json",
    "cluster_db": "cluster_analysis.db",
}
_DB = re.compile(r"ascend_pytorch_profiler(?:_(\d+))?\.db|msprof_\d+\.db")
_KINETO = re.compile(r".*\.pt\.trace\.json(\.gz)?|.*\.json\.gz")
_SKIP_DIRS = {"FRAMEWORK", "logs", "__pycache__", ".git"}
LOOKED_FOR = (
    "*_ascend_pt folders with ASCEND_PROFILER_OUTPUT/ (trace_view.json, kernel_details.csv, "
    "step_trace_time.csv, ...), ascend_pytorch_profiler*.db, *.pt.trace.json[.gz] Kineto traces, "
    "cluster_analysis_output/"
)


@dataclass
class Source:
    kind: str  # "ascend" | "ascend-db" | "kineto" | "cluster"
    path: Path  # the result folder (ascend, cluster) or the file (kineto, ascend-db)
    files: dict[str, Path] = field(default_factory=dict)  # role -> file
    rank: int | None = None  # as the profile's own info says, when it says

    @property
    def label(self) -> str:
        return str(self.path)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _rank_of(result: Path) -> int | None:
    """The rank the Ascend result's profiler_info*.json records (rank_id), else None."""
    try:
        names = sorted(os.listdir(result))
    except OSError:
        return None
    for name in names:
        m = re.fullmatch(r"profiler_info(?:_(\d+))?\.json", name)
        if not m:
            continue
        try:
            info = json.loads(read_head(result / name, 1 << 20) or b"{}")
        except (ValueError, UnicodeDecodeError, RecursionError):
            info = {}
        rank = info.get("rank_id") if isinstance(info, dict) else None
        if isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank < 1 << 20:
            return rank
        if m.group(1) is not None:
            return int(m.group(1))
    return None


def ascend_source(result: Path) -> Source | None:
    """The Ascend result rooted at ``result`` (the folder holding ASCEND_PROFILER_OUTPUT,
    or that folder itself), or None when it holds none of the files read."""
    out = result / OUTPUT if result.name != OUTPUT else result
    root = out.parent
    files = {role: out / name for role, name in ASCEND_FILES.items() if _regular(out / name)}
    for extra in ("profiler_metadata.json",):
        if _regular(root / extra):
            files["metadata"] = root / extra
    if any(role in files for role in ASCEND_FILES):
        return Source("ascend", root, files, _rank_of(root))
    try:
        dbs = sorted(n for n in os.listdir(out) if _DB.fullmatch(n)) if _is_dir(out) else []
    except OSError:
        dbs = []
    if dbs:
        return db_source(out / dbs[0], _rank_of(root))
    return None


def db_source(path: Path, rank: int | None = None) -> Source:
    """The .db export ``path``, with analysis.db when it lies beside it; the rank from the
    file's name when the result's profiler_info does not give it."""
    files = {"db": path}
    if _regular(path.with_name("analysis.db")):
        files["analysis_db"] = path.with_name("analysis.db")
    m = _DB.fullmatch(path.name)
    if rank is None and m and m.group(1) and len(m.group(1)) < 7:
        rank = int(m.group(1))
    return Source("ascend-db", path, files, rank)


def _cluster_source(folder: Path) -> Source | None:
    files = {role: folder / name for role, name in CLUSTER_FILES.items() if _regular(folder / name)}
    return Source("cluster", folder, files) if files else None


def _file_source(path: Path) -> Source | None:
    if path.parent.name == OUTPUT:
        return ascend_source(path.parent)
    if _DB.fullmatch(path.name):
        return db_source(path, _rank_of(path.parent.parent))
    if path.name in CLUSTER_FILES.values():
        return _cluster_source(path.parent)
    if path.name == ASCEND_FILES["trace_view"]:
        return Source("ascend", path.parent, {"trace_view": path})
    if path.suffix in (".json", ".gz"):
        return Source("kineto", path, {"trace": path})
    return None


def _walk(top: Path, found: list[Source], seen: set[Path]) -> None:
    """Depth-first, sorted, bounded walk of ``top`` collecting the sources it holds."""
    entries = 0
    stack: list[tuple[Path, int]] = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        reads.folder(folder)
        if folder.name == OUTPUT or _is_dir(folder / OUTPUT):
            src = ascend_source(folder)
            if src is not None and src.path not in seen:
                seen.add(src.path)
                found.append(src)
            continue
        if folder.name == "cluster_analysis_output" and (src := _cluster_source(folder)):
            found.append(src)
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        entries += len(names)
        if entries > MAX_ENTRIES:
            raise UsageError(
                f"{escape(str(top))}: more than {MAX_ENTRIES} names below it; give the profile folders"
            )
        subfolders = []
        for name in names:
            path = folder / name
            if _is_dir(path):
                if name.startswith("PROF_"):
                    found.extend(_msprof_dbs(path))
                elif depth < MAX_DEPTH and name not in _SKIP_DIRS:
                    subfolders.append((path, depth + 1))
            elif _DB.fullmatch(name) and _regular(path):
                found.append(db_source(path))
            elif _KINETO.fullmatch(name) and _regular(path) and _looks_kineto(path):
                found.append(Source("kineto", path, {"trace": path}))
        stack.extend(reversed(subfolders))


def _msprof_dbs(prof: Path) -> list[Source]:
    """msprof's .db export of a PROF_* folder (its top, or mindstudio_profiler_output/)."""
    for folder in (prof, prof / "mindstudio_profiler_output"):
        try:
            names = sorted(os.listdir(folder)) if _is_dir(folder) else []
        except OSError:
            continue
        dbs = [n for n in names[:MAX_ENTRIES] if n.startswith("msprof_") and _DB.fullmatch(n)]
        if dbs and _regular(folder / dbs[-1]):
            return [db_source(folder / dbs[-1])]
    return []


def _looks_kineto(path: Path) -> bool:
    """A JSON file whose head names traceEvents (gzip'd files are taken on their name)."""
    head = read_head(path, 1 << 16)
    if head[:2] == b"\x1f\x8b":
        return True
    return b'"traceEvents"' in head or b'"schemaVersion"' in head


def discover(paths: list[Path]) -> list[Source]:
    """Every profile under ``paths``, in path order; UsageError when a path holds none."""
    sources: list[Source] = []
    for path in paths:
        shown = escape(str(path))
        if not os.path.lexists(path):
            raise UsageError(f"{shown}: no such file or folder")
        got: list[Source] = []
        if _is_dir(path) or (path.is_dir() and not path.is_symlink()):
            _walk(path, got, set())
        elif _regular(path):
            src = _file_source(path)
            got = [src] if src is not None else []
            if not got:
                raise UsageError(f"{shown}: not a profile file (looked for {LOOKED_FOR})")
        elif path.is_dir():  # a symlink to a folder, given by name: followed
            _walk(path, got, set())
        else:
            raise UsageError(f"{shown}: not a regular file or folder")
        if not got:
            raise UsageError(f"{shown}: no profile found (looked for {LOOKED_FOR})")
        sources.extend(got)
    return _unique(sources)


def _unique(sources: list[Source]) -> list[Source]:
    out, seen = [], set()
    for src in sources:
        key = (src.kind, os.path.realpath(src.path))
        if key not in seen:
            seen.add(key)
            out.append(src)
    return out
