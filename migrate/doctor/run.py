"""Run every registered check on one context and collect the report."""

from __future__ import annotations

from migrate.doctor.checks import ordered
from migrate.doctor.context import Context, Options
from migrate.doctor.report import Check, Outcome, Report


def run_doctor(options: Options) -> Report:
    ctx = Context(options)
    checks: list[Check] = []
    for name, fn, meta in ordered():
        try:
            found = fn(ctx)
            if not isinstance(found, Outcome):
                raise TypeError(f"returned {type(found).__name__}, not an Outcome")
        except Exception as exc:  # a bug in one check must not hide the others' answers
            found = Outcome(
                "fail",
                f"this check failed internally: {type(exc).__name__}: {exc}",
                ["please report it with this output"],
                fix="report it with this output (migrate doctor --format json); the other checks stand",
            )
        checks.append(Check.of(name, meta["group"], found))
    return Report(checks, ctx.python, str(options.root))
