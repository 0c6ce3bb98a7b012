"""Libraries with an NPU floor (the first release that knows NPUs): the installed versions,
and the pins in the project's requirement files. Both come from the scan's dependency rows
(MIG750-MIG752, rules/dependency_compat.yaml), never from a second list."""

from __future__ import annotations

from packaging.version import Version

from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context
from migrate.doctor.floors import npu_floors
from migrate.doctor.report import Outcome

GROUP = "libraries"
PROJECT_RULES = ("MIG750", "MIG751", "MIG752")


@CHECKS.register("npu-floors", group=GROUP, order=10)
def installed_floors(ctx: Context) -> Outcome:
    floors = npu_floors()
    if ctx.meta is None:
        return Outcome("skip", "the interpreter could not be asked")
    evidence, low, fixes, rules = [], [], [], set()
    for name, (floor, rule) in sorted(floors.items()):
        dist = ctx.dist(name)
        if dist is None:
            continue
        rules.add(f"rules/{rule.source} {rule.code}")
        if dist.version is None:
            evidence.append(f"{name} {dist.version_text}: version not understood")
            continue
        if dist.version < Version(floor):
            low.append(name)
            evidence.append(f"{name} {dist.version_text}: NPU support arrived in {floor}")
            fixes.append(f"pip install '{name}>={floor}'")
        else:
            evidence.append(f"{name} {dist.version_text} (NPU support since {floor})")
    if not evidence:
        return Outcome("skip", "none of " + ", ".join(sorted(floors)) + " is installed")
    if low:
        return Outcome(
            "fail",
            f"installed before NPU support: {', '.join(low)}",
            evidence,
            fix="\n".join(fixes),
            sources=tuple(sorted(rules)),
        )
    return Outcome("ok", "installed libraries know NPUs", evidence, sources=tuple(sorted(rules)))


@CHECKS.register("project-pins", group=GROUP, order=20)
def project_pins(ctx: Context) -> Outcome:
    project = ctx.options.project
    if project is None:
        return Outcome("skip", "no project given (--project PATH)")
    from migrate.scan.session import ScanRequest, run_session

    session = run_session(ScanRequest([project], select=list(PROJECT_RULES), no_cache=True))
    findings = sorted(session.result.findings, key=lambda f: (f.path, f.line))
    if not findings:
        return Outcome("ok", f"the requirement files of {project} fit the NPU stack")
    evidence = [f"{f.path}:{f.line}: {f.rule} {f.message}" for f in findings[:20]]
    fixes = [f"{f.path}:{f.line}: {f.fix.description}" for f in findings if f.fix][:20]
    return Outcome(
        "warn",
        f"{len(findings)} pin(s) in {project} rule out the NPU stack",
        evidence,
        fix="\n".join(fixes) or "raise the pins named above",
        sources=tuple(sorted({f"rules/dependency_compat.yaml {f.rule}" for f in findings})),
    )
