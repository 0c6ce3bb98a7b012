"""Run every registered check on one context and collect the report."""

from __future__ import annotations

from migrate.doctor.checks import ordered
from migrate.doctor.context import Context, Options
from migrate.doctor.report import Check, Report


def run_doctor(options: Options) -> Report:
    ctx = Context(options)
    checks: list[Check] = []
    for name, fn, meta in ordered():
        try:
            check = fn(ctx)
        except Exception as exc:  # a bug in one check must not hide the others' answers
            check = Check(
                name,
                meta["group"],
                "fail",
                f"this check failed internally: {type(exc).__name__}: {exc}",
                ["please report it with this output"],
            )
        if check.id != name or check.group != meta["group"]:
            raise RuntimeError(f"doctor check {name} returned {check.id}/{check.group}")
        checks.append(check)
    return Report(checks, ctx.python, str(options.root))
