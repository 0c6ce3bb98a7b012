"""What `migrate doctor` found: one :class:`Check` per question, rendered as text or JSON.

A check is ``ok``, ``warn`` (it works, but not as published or not everywhere), ``fail`` (the
port will not run on the NPU until this is fixed) or ``skip`` (nothing to check here, e.g.
no project given). The machine is ready when no check fails. JSON: docs/contracts.md §8.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate import __version__
from migrate.core.display import escape

STATUSES = ("ok", "warn", "fail", "skip")
GROUPS = ("python", "cann", "environment", "devices", "libraries")


@dataclass
class Outcome:
    """What one check found; the check's id and group are those it is registered with
    (checks/__init__.py), written once, never by the check."""

    status: str  # one of STATUSES
    summary: str  # one line: what was found
    evidence: list[str] = field(default_factory=list)  # what it rests on (files, versions)
    fix: str | None = None  # the exact command or line to run
    sources: tuple[str, ...] = ()  # public sources of the facts applied (Source.cite())

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} (one of {', '.join(STATUSES)})")
        if self.status == "fail" and not (self.fix or "").strip():
            raise ValueError(f"a failed check names its fix: {self.summary!r} has none")


@dataclass
class Check(Outcome):
    """An :class:`Outcome` under the id and group its check is registered with."""

    id: str = field(kw_only=True)  # stable, kebab-case: "torch-build"
    group: str = field(kw_only=True)  # one of GROUPS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.group not in GROUPS:
            raise ValueError(f"check {self.id}: group {self.group!r}")

    @classmethod
    def of(cls, id: str, group: str, found: Outcome) -> Check:
        return cls(found.status, found.summary, found.evidence, found.fix, found.sources, id=id, group=group)


@dataclass
class Report:
    checks: list[Check]
    python: dict[str, Any]  # executable, version, machine of the probed interpreter
    root: str = "/"

    @property
    def ready(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": {"name": "ascend-migrate", "version": __version__},
            "ready": self.ready,
            "python": self.python,
            "root": self.root,
            "checks": [
                {
                    "id": c.id,
                    "group": c.group,
                    "status": c.status,
                    "summary": c.summary,
                    "evidence": c.evidence,
                    "fix": c.fix,
                    "sources": list(c.sources),
                }
                for c in self.checks
            ],
            "summary": self.counts(),
        }


_LABEL = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
_COLOR = {"ok": "32", "warn": "33", "fail": "31;1", "skip": "2"}


def render_text(report: Report, color: bool = False) -> str:
    """Checks grouped, each line starting with its verdict (Polygraphy style), evidence and
    the fix under it; the last line says ready or not."""
    py = report.python
    lines = [
        f"migrate doctor: {escape(str(py.get('executable') or '?'))} "
        f"(Python {py.get('version') or '?'}, {py.get('machine') or '?'})"
    ]
    width = max((len(c.id) for c in report.checks), default=10)
    for group in GROUPS:
        checks = [c for c in report.checks if c.group == group]
        if not checks:
            continue
        lines.append("")
        lines.append(group)
        for c in checks:
            label = f"{_LABEL[c.status]:<4}"
            if color:
                label = f"\x1b[{_COLOR[c.status]}m{label}\x1b[0m"
            lines.append(f"  {label}  {c.id:<{width}}  {escape(c.summary)}")
            pad = " " * (10 + width)
            for item in c.evidence:
                lines.append(f"{pad}· {escape(_clip(item))}")
            if c.fix:
                fix_lines = c.fix.splitlines() or [""]
                lines.append(f"{pad}fix: {escape(fix_lines[0])}")
                lines.extend(f"{pad}     {escape(more)}" for more in fix_lines[1:])
    n = report.counts()
    verdict = "ready" if report.ready else "not ready"
    lines.append("")
    lines.append(f"{verdict}: {n['fail']} failed, {n['warn']} warnings, {n['ok']} ok, {n['skip']} skipped")
    return "\n".join(lines) + "\n"


EVIDENCE_CHARS = 240  # an evidence line as the text report shows it (a tool's output may be one huge line)


def _clip(item: str) -> str:
    if len(item) <= EVIDENCE_CHARS:
        return item
    return f"{item[:EVIDENCE_CHARS]}... ({len(item) - EVIDENCE_CHARS} more characters)"
