"""CI jobs that run on NVIDIA runners are reported, never rewritten as safe."""

from __future__ import annotations

from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text
from migrate.scan.text.targets import gpu_job_lines

WORKFLOW = """\
name: tests
on: [push]
jobs:
  cpu:
    runs-on: ubuntu-latest
    env:
      CUDA_LAUNCH_BLOCKING: "1"
    steps:
      - run: pytest
  gpu:
    runs-on: [self-hosted, linux, gpu-a100]
    env:
      CUDA_LAUNCH_BLOCKING: "1"
    steps:
      - run: pytest
  docker:
    runs-on: ubuntu-latest
    steps:
      - run: docker run --gpus all img env CUDA_LAUNCH_BLOCKING=1 pytest
"""


def test_gpu_jobs_are_found_by_runner_label_or_docker_gpus():
    assert gpu_job_lines(WORKFLOW) == [(10, 15), (16, 19)]
    assert gpu_job_lines(WORKFLOW.replace("gpu-a100", "x").replace("--gpus all", "")) == []


def test_findings_in_gpu_jobs_have_no_fix():
    found = scan_text(WORKFLOW, ".github/workflows/tests.yml", "yaml", default_rules(), "npu")
    by_line = {f.line: f for f in found if f.rule == "MIG701"}
    assert by_line[7].fix is not None  # the CPU job is ported
    assert by_line[13].fix is None and by_line[13].category == "manual"
    assert "NVIDIA runner" in by_line[13].message
    same_file_elsewhere = scan_text(WORKFLOW, "docs/tests.yml", "yaml", default_rules(), "npu")
    assert all(f.fix is not None for f in same_file_elsewhere if f.rule == "MIG701")
