"""What the port target changes for non-Python files, and CI jobs that run on NVIDIA runners.

A CI workflow job that runs on a GPU runner (``runs-on`` with a GPU/NVIDIA label, or
``docker run --gpus``) tests the CUDA build: rewriting it for Ascend would silently turn the
project's CUDA CI into something else. Its findings are reported, never fixed as safe —
a person decides whether the job moves to an Ascend runner or stays.
"""

from __future__ import annotations

import re

from migrate.core.findings import Finding
from migrate.core.targets import DEFAULT_TARGET

_CI_PATH = re.compile(
    r"(^|/)(\.github/workflows/[^/]+\.ya?ml|\.gitlab-ci\.ya?ml|"
    r"\.circleci/config\.ya?ml|azure-pipelines\.ya?ml|\.buildkite/[^/]+\.ya?ml)$"
)
_GPU_RUNNER = re.compile(
    r"runs-on:.*\b(gpu|gpus|cuda|nvidia|a10g?|a100|h100|h200|v100|t4|l4|l40s?|rtx\w*)\b"
    r"|--gpus\b|gpus:\s*all|nvidia\.com/gpu",
    re.IGNORECASE,
)
_JOB = re.compile(r"^( {2}|\t)([A-Za-z0-9_.-]+|\"[^\"]+\"|'[^']+'):\s*(#.*)?$")


def gpu_job_lines(text: str) -> list[tuple[int, int]]:
    """1-based line ranges [a, b] of CI jobs that run on NVIDIA runners."""
    lines = text.splitlines()
    if not _GPU_RUNNER.search(text):
        return []
    try:
        top = next(i for i, line in enumerate(lines) if re.match(r"^jobs:\s*(#.*)?$", line))
    except StopIteration:
        return [(1, len(lines))]  # no jobs table (GitLab style): the whole file
    starts = [i for i in range(top + 1, len(lines)) if _JOB.match(lines[i])]
    ends = [*starts[1:], len(lines)]
    return [
        (a + 1, b) for a, b in zip(starts, ends, strict=True) if _GPU_RUNNER.search("\n".join(lines[a:b]))
    ]


def retarget_text(
    findings: list[Finding], text: str, rel: str, kind: str, target: str = DEFAULT_TARGET
) -> list[Finding]:
    """``findings`` of one text file for ``target`` (new findings): CI jobs on NVIDIA
    runners and, for portable, CUDA env vars are left to a person."""
    if findings and _CI_PATH.search(rel):
        jobs = gpu_job_lines(text)
        findings = [
            x.for_a_person("this CI job runs on an NVIDIA runner: move it to Ascend by hand, or keep it")
            if x.fix is not None and any(a <= x.line <= b for a, b in jobs)
            else x
            for x in findings
        ]
    if target == "portable":
        from migrate.core.rules import default_rules

        env = {r.code for r in default_rules() if r.kind == "env-var"}
        # `export CUDA_VISIBLE_DEVICES=0` keeps working on CUDA hosts
        findings = [
            x.for_a_person("portable: keep it for CUDA hosts and set the Ascend variable beside it")
            if x.rule in env and x.fix is not None
            else x
            for x in findings
        ]
    return [x.for_target(target) for x in findings]
