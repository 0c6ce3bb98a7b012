"""What the port target changes for non-Python files, and CI jobs that run on NVIDIA runners.

A CI workflow job that runs on a GPU runner (``runs-on`` with a GPU/NVIDIA label, or
``docker run --gpus``) tests the CUDA build: rewriting it for Ascend would silently turn the
project's CUDA CI into something else. Its findings are reported, never fixed as safe —
a person decides whether the job moves to an Ascend runner or stays.

Decisions (``Finding.decision``, for the effort model): every finding of a CI job belongs to
the job (its first line), every finding of a container image file to the image (line 1):
moving a job or an image to Ascend is one piece of work however many lines it touches.
A job or a Dockerfile/script that builds or runs Horovod is NVIDIA-only (Horovod has no NPU
build): its findings are left as they are, in every target, and cost nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace

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


_HOROVOD = re.compile(r"\bhorovod(run)?\b", re.IGNORECASE)
_NVIDIA_ONLY = "NVIDIA-only (it builds or runs Horovod, which has no NPU build): left as is"
_IMAGE_KINDS = ("docker",)


def job_lines(text: str) -> list[tuple[int, int]]:
    """1-based line ranges [a, b] of a CI file's jobs (no jobs table: the whole file)."""
    lines = text.splitlines()
    try:
        top = next(i for i, line in enumerate(lines) if re.match(r"^jobs:\s*(#.*)?$", line))
    except StopIteration:
        return [(1, len(lines))]  # no jobs table (GitLab style): the whole file
    starts = [i for i in range(top + 1, len(lines)) if _JOB.match(lines[i])]
    ends = [*starts[1:], len(lines)]
    return [(a + 1, b) for a, b in zip(starts, ends, strict=True)]


def _job_text(lines: list[str], job: tuple[int, int]) -> str:
    return "\n".join(lines[job[0] - 1 : job[1]])


def gpu_job_lines(text: str) -> list[tuple[int, int]]:
    """1-based line ranges [a, b] of CI jobs that run on NVIDIA runners."""
    if not _GPU_RUNNER.search(text):
        return []
    lines = text.splitlines()
    return [job for job in job_lines(text) if _GPU_RUNNER.search(_job_text(lines, job))]


def _decisions(findings: list[Finding], text: str, rel: str, kind: str) -> list[Finding]:
    """Each finding with the decision it belongs to; Horovod jobs and files left as is."""
    if kind in _IMAGE_KINDS or not _CI_PATH.search(rel):
        horovod = kind in ("docker", "shell") and bool(_HOROVOD.search(text))
        head = 1 if kind in _IMAGE_KINDS else 0
        return [_decided(x, head, horovod) for x in findings]
    lines = text.splitlines()
    jobs = [(job, bool(_HOROVOD.search(_job_text(lines, job)))) for job in job_lines(text)]
    out = []
    for x in findings:
        job = next(((j, h) for j, h in jobs if j[0] <= x.line <= j[1]), None)
        out.append(_decided(x, job[0][0], job[1]) if job else x)
    return out


def _decided(x: Finding, head: int, horovod: bool) -> Finding:
    if horovod:
        x = x.left_as_is(_NVIDIA_ONLY)
    return replace(x, decision=head) if head else x


def retarget_text(
    findings: list[Finding], text: str, rel: str, kind: str, target: str = DEFAULT_TARGET
) -> list[Finding]:
    """``findings`` of one text file for ``target`` (new findings): CI jobs on NVIDIA
    runners and, for portable, CUDA env vars are left to a person."""
    findings = _decisions(findings, text, rel, kind)
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
