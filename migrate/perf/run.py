"""`migrate perf` as a Python API: paths -> :class:`~migrate.perf.model.Report`.

``analyze(paths, ref=...)`` discovers the profiles, reads and analyses each rank (in
``jobs`` forked workers when there are several: each hands back only its RankResult), runs
the cluster detectors across ranks, and adds MFU, the side-by-side compare with ``ref`` and
the gate. An unreadable or hostile file is a UsageError naming it (the CLI's exit 2).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.perf.analyze.cluster import ClusterView
from migrate.perf.analyze.rank import analyze_rank
from migrate.perf.catalog import DETECTORS, catalog
from migrate.perf.model import Finding, ProfileInfo, RankResult, Report
from migrate.perf.read.cluster import ClusterData, read_cluster
from migrate.perf.read.discover import Source, discover
from migrate.perf.read.jsonstream import TraceError

__all__ = ["PerfRequest", "analyze", "read_side"]

Progress = Callable[[str, int, int], None]  # (what, done, total)
Outcome = RankResult | ClusterData | str  # a worker's result, or the one-line error it met


@dataclass
class PerfRequest:
    paths: list[Path]
    ref: list[Path] = field(default_factory=list)
    jobs: int | None = None
    model: str | None = None  # MOD:FN whose FLOPs per step are counted (torch)
    flops: float | None = None  # model FLOPs per step, given
    chip: str | None = None
    ref_chip: str | None = None
    dtype: str | None = None  # the compute dtype for the chip's peak (bf16, fp16, fp32 ...)
    fail_on: dict[str, Any] = field(default_factory=dict)


def _read_timeline(src: Source, progress=None):
    if src.kind == "ascend":
        from migrate.perf.read.ascend import read_ascend

        return read_ascend(src, progress)
    if src.kind == "kineto":
        from migrate.perf.read.kineto import read_kineto

        return read_kineto(src.path, progress)
    if src.kind == "ascend-db":
        from migrate.perf.read.ascend_db import read_ascend_db

        return read_ascend_db(src, progress)
    raise AssertionError(src.kind)


def _analyze_source(src: Source) -> Outcome:
    """A worker's job: one source -> its result, or the one-line error it met."""
    try:
        if src.kind == "cluster":
            return read_cluster(src)
        tl = _read_timeline(src)
        if tl.rank is None:
            tl.rank = src.rank
        return analyze_rank(tl)
    except TraceError as exc:
        return f"{escape(str(src.path))}: {exc}"


def _quiet() -> None:
    from migrate.scan.parallel import quiet_worker

    quiet_worker()


def _map(
    sources: list[Source], jobs: int | None, progress: Progress | None
) -> list[RankResult | ClusterData | str]:
    from migrate.scan.parallel import can_fork, clamp_jobs

    jobs = clamp_jobs(jobs, len(sources))
    if jobs <= 1 or len(sources) < 2 or not can_fork():
        out = []
        for k, src in enumerate(sources):
            out.append(_analyze_source(src))
            if progress:
                progress("profiles", k + 1, len(sources))
        return out
    results: list[Any] = [None] * len(sources)
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_quiet) as pool:
        for done, (k, got) in enumerate(pool.imap_unordered(_indexed, list(enumerate(sources))), 1):
            results[k] = got
            if progress:
                progress("profiles", done, len(sources))
    return results


def _indexed(item: tuple[int, Source]) -> tuple[int, Any]:
    return item[0], _analyze_source(item[1])


@dataclass
class Side:
    """One side of a run: its rank results and the cluster outputs beside them."""

    ranks: list[RankResult]
    clusters: list[ClusterData]
    profiles: list[ProfileInfo]
    mixed: str | None = None  # why the ranks are not one run (no cross-rank findings), or None


def read_side(paths: list[Path], jobs: int | None = None, progress: Progress | None = None) -> Side:
    sources = discover(paths)
    got = _map(sources, jobs, progress)
    errors = [g for g in got if isinstance(g, str)]
    if errors:
        raise UsageError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    ranks = [g for g in got if isinstance(g, RankResult)]
    clusters = [g for g in got if isinstance(g, ClusterData)]
    mixed = not_one_run(ranks)
    if mixed is None:
        _number_ranks(ranks)
    profiles = _profiles(ranks, clusters)
    return Side(ranks, clusters, profiles, mixed)


def not_one_run(ranks: list[RankResult]) -> str | None:
    """Why the profiles are not the ranks of one run (a note), or None when they can be:
    one kind and device, and no rank number twice. Profiles that are not one run are each
    reported on their own, with no cross-rank findings and no made-up rank numbers."""
    if len(ranks) < 2:
        return None
    kinds = sorted({f"{r.profile.kind}/{r.profile.device}" for r in ranks})
    if len(kinds) > 1:
        return f"the {len(ranks)} profiles are not one run ({', '.join(kinds)}): each is reported on its own"
    numbers = [r.rank for r in ranks if r.rank is not None]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    if twice:
        shown = ", ".join(str(n) for n in twice[:5])
        return (
            f"the {len(ranks)} profiles are not one run (rank {shown} appears more than once): "
            "each is reported on its own"
        )
    return None


def _number_ranks(ranks: list[RankResult]) -> None:
    """Ranks the profiles did not number get the next free numbers, in path order, when a
    run has several; a single profile keeps None."""
    if len(ranks) < 2:
        return
    taken = {r.rank for r in ranks if r.rank is not None}
    free = (n for n in range(1 << 20) if n not in taken)
    for r in sorted(ranks, key=lambda r: r.profile.path):
        if r.rank is None:
            r.rank = next(free)
            r.profile.ranks = [r.rank]
            for step in r.steps:
                step.rank = r.rank
            for op in r.top_ops:
                op.rank = r.rank
            for finding in r.findings:
                finding.rank = r.rank


def _profiles(ranks: list[RankResult], clusters: list[ClusterData]) -> list[ProfileInfo]:
    out = [r.profile for r in ranks]
    for c in clusters:
        numbers: list[int | None] = list(sorted(c.steps))
        out.append(ProfileInfo(c.path, "cluster", "npu", numbers, None, []))
    return out


def cluster_findings(side: Side) -> list[Finding]:
    view = ClusterView([] if side.mixed else side.ranks, side.clusters)
    out: list[Finding] = []
    for finding_id, detect in DETECTORS.items():
        if DETECTORS.meta(finding_id).get("scope") == "cluster":
            out.extend(detect(view))
    return out


def _flops(request: PerfRequest) -> dict[str, Any] | None:
    """One rank's model FLOPs per step: ``--flops`` as given, else ``--model`` counted."""
    if request.flops:
        return {"total": float(request.flops), "source": "--flops"}
    if request.model:
        from migrate.perf.analyze.flops import count_flops

        return {**count_flops(request.model), "source": f"--model {request.model}"}
    return None


def check_request(request: PerfRequest) -> None:
    """Usage errors found before any profile is read: an unknown chip or dtype."""
    from migrate.perf.analyze.mfu import check_chip, check_dtype

    request.dtype = check_dtype(request.dtype)
    check_chip(request.chip, "--chip")
    check_chip(request.ref_chip, "--ref-chip")
    if "mfu" in request.fail_on and not (request.model or request.flops):
        raise UsageError("--fail-on mfu=: MFU needs --model MOD:FN or --flops N")
    if "regression" in request.fail_on and not request.ref:
        raise UsageError("--fail-on regression=: needs --ref PATH (a reference run)")


def analyze(request: PerfRequest, progress: Progress | None = None) -> Report:
    catalog()  # the catalog and its cross-references are checked before any work
    check_request(request)
    side = read_side(request.paths, request.jobs, progress)
    findings = [f for r in side.ranks for f in r.findings] + cluster_findings(side)
    findings.sort(key=lambda f: (-(f.saving_us or 0.0), f.id, f.rank if f.rank is not None else -1))
    notes = [n for c in side.clusters for n in c.notes] + ([side.mixed] if side.mixed else [])
    report = Report(side.profiles, side.ranks, findings, notes=notes)
    ref = read_side(request.ref, request.jobs, progress) if request.ref else None
    flops = _flops(request)
    from migrate.perf.analyze.mfu import mfu_for

    if flops:
        report.mfu = mfu_for(side.ranks, flops, request.chip, request.dtype, "--chip", side.mixed)
    if ref is not None:
        from migrate.perf.analyze.compare import compare_sides

        ref_mfu = None
        if flops:
            ref_mfu = mfu_for(ref.ranks, flops, request.ref_chip, request.dtype, "--ref-chip", ref.mixed)
        report.compare = compare_sides(side, ref, report.mfu, ref_mfu)
    if request.fail_on:
        from migrate.perf.analyze.gate import judge

        report.gate = judge(report, request.fail_on)
    return report
