"""Kind ``dependency-version`` in text files: version pins that rule out the NPU stack
(the verdicts: migrate.scan.tables.dependency_versions).

The message and fix title may use ``{package}``, ``{spec}`` (the version part as written)
and ``{version}`` (what the rule wants). ``contains`` rules replace the version part with
``=={version}``; ``companion`` rules add the companion requirement on a line of its own
after the package's line in requirement files.
"""

from __future__ import annotations

from collections.abc import Sequence

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, fix_for
from migrate.core.kinds import rule_kind
from migrate.core.rules import Rule
from migrate.scan.tables.dependency_versions import KIND, PARAMS, tokens, verdict
from migrate.scan.tables.requirements import Requirement, hash_pinned
from migrate.scan.text.dep_sources import locate
from migrate.scan.text.textfile import TextFile


@rule_kind(KIND, engine="text", params=PARAMS, tokens=tokens)
def scan_dependency_versions(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    reqs = list(locate(tf))
    names = {r.name: tf.text[r.start : r.end] for r in reqs}
    findings: list[Finding] = []
    # pip's hash-checking mode (any --hash in the file) refuses an unhashed line
    hashed = "--hash" in tf.text
    newline = newline_of(tf.text)
    for req in reqs:
        text = tf.text[req.start : req.end]
        for rule in rules:
            want = verdict(rule, req.name, text, names)
            if want is None:
                continue
            spec = tf.text[req.spec_start : req.spec_end].strip()
            values = {"package": req.raw_name, "spec": spec, "version": want}
            if rule.params.get("mode") == "companion":
                insert = None if hashed else _companion_insert(tf, req, want, newline)
                fix = (
                    None if insert is None else fix_for(rule, [Edit(insert[0], insert[0], insert[1])], values)
                )
                f = tf.finding(rule, req.start, req.end, values, fix=fix)
            else:
                local = "+cpu" if "+" in spec else ""  # a local build stays the CPU build
                pinned = hash_pinned(tf.text, req.start)  # a new pin would fail its --hash
                f = tf.finding(
                    rule,
                    req.spec_start,
                    req.spec_end,
                    values,
                    f"=={want}{local}" if spec and not pinned else None,
                    described={**values, "version": want + local},
                )
            if f is not None:
                findings.append(f)
    return findings


def _companion_insert(tf: TextFile, req: Requirement, companion: str, newline: str) -> tuple[int, str] | None:
    """(offset, text) to insert after the requirement: a line of its own after its line in
    a requirements file; None elsewhere and for continued lines."""
    if tf.kind != "requirements":
        return None
    line_end = tf.text.find("\n", req.end)
    line_end = len(tf.text) if line_end == -1 else line_end
    if tf.text[line_end - 1 : line_end] == "\r":
        line_end -= 1
    if tf.text[req.end : line_end].rstrip().endswith("\\"):
        return None
    return line_end, newline + companion
