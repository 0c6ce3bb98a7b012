"""Work packages per decision, on small real inputs: a device branch is one package however
long it is, a CI job and a container image are one package each, type checks and code that
never runs on the target (guards for an older torch, `if False:`) cost nothing, Horovod
files are NVIDIA-only, and `if torch.cuda.is_available():` is no optional-import guard."""

from __future__ import annotations

import json
import textwrap

from migrate.core.rules import default_rules
from migrate.report.effort import EffortModel, estimate
from migrate.scan.engine import ScanOptions, scan_paths, scan_text

RULES = {r.code: r for r in default_rules()}


def _scan(code: str, rel: str = "m.py", kind: str = "python", target: str = "portable"):
    return scan_text(textwrap.dedent(code), rel, kind, default_rules(), target)


def _effort(found):
    return estimate(found, EffortModel(RULES))


# ignite 0.5.5's auto_model, cut down: the DataParallel arm of a world-size if/elif chain
DATA_PARALLEL = """
import torch
import torch.nn as nn


def auto_model(model, device, world_size):
    if world_size > 1:
        model = nn.parallel.DistributedDataParallel(model)
    elif torch.cuda.device_count() > 1 and "cuda" in device.type:
        ids = list(range(torch.cuda.device_count()))
        kwargs = {"output_device": ids[0]}
        # single process, many devices
        model = torch.nn.parallel.DataParallel(model, device_ids=ids, **kwargs)
    return model


def unwrap(obj):
    if isinstance(obj, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        return obj.module
    return obj
"""


def test_a_data_parallel_branch_is_one_package_and_its_type_check_is_free():
    found = _scan(DATA_PARALLEL)
    branch = [f for f in found if 9 <= f.line <= 13 and not f.npu_aware]
    assert {f.rule for f in branch} >= {"MIG101", "MIG107"} and len(branch) >= 3
    assert {f.decision for f in branch} == {9}  # the elif that tests the device
    effort = _effort(found)
    paid = [p for p in effort.packages if p.minutes]
    assert len(paid) == 1, [p.name for p in paid]
    assert paid[0].minutes == 60 and "one decision" in paid[0].name
    assert paid[0].findings == len(branch)
    # the isinstance check on nn.DataParallel is found, and free
    (check,) = [f for f in found if f.line == 18]
    assert check.npu_aware and check.fix is None
    assert effort.minutes == 60


OLD_TORCH = """
import torch
from packaging.version import Version

_TORCH_LT_18 = Version(torch.__version__) < Version("1.8.0")


def device_ids():
    if Version(torch.__version__) < Version("1.8.0"):
        return [torch.cuda.current_device()]
    return []


def legacy():
    if _TORCH_LT_18:
        torch.cuda.synchronize()
    if False:
        torch.cuda.empty_cache()


def recent():
    if Version(torch.__version__) < Version("2.6"):
        torch.cuda.ipc_collect()
"""


def test_code_for_an_older_torch_than_torch_npu_runs_with_is_dead_and_free():
    found = _scan(OLD_TORCH)
    by_line = {f.line: f for f in found}
    for line in (10, 16, 18):  # under < 1.8.0 (inline and by name), under `if False:`
        assert by_line[line].npu_aware and by_line[line].fix is None, by_line[line].message
        assert "never runs on the target" in by_line[line].message
    live = by_line[23]  # torch 2.6 is newer than the oldest torch_npu torch: it may run
    assert not live.npu_aware and live.fix is not None
    effort = _effort(found)
    assert {p.findings for p in effort.packages if p.minutes} == {1}
    assert effort.minutes == _effort([live]).minutes > 0


def test_the_else_arm_of_a_dead_guard_is_ported():
    found = _scan("""
    import torch
    from packaging.version import Version

    if Version(torch.__version__) >= Version("1.9.0"):
        dev = torch.device("cuda")
    else:
        dev = None
    """)
    (f,) = [f for f in found if f.rule == "MIG201"]
    assert not f.npu_aware and f.fix is not None  # >= 1.9 holds on every NPU torch: live


def test_a_device_availability_test_is_not_an_optional_import():
    found = _scan("""
    import torch


    def device():
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    """)
    assert found and not any(f.guarded for f in found)
    assert "guarded import" not in " ".join(p.name for p in _effort(found).packages)


WORKFLOW = """\
name: gpu
on: [push]
jobs:
  gpu-tests:
    runs-on: linux-gpu-a100
    steps:
      - run: nvidia-smi
      - run: pip install torch --index-url https://download.pytorch.org/whl/cu126
      - run: docker run --gpus=all img pytest
  hvd-tests:
    runs-on: linux-gpu-a100
    steps:
      - run: pip install horovod
      - run: nvidia-smi
"""


def test_a_ci_job_is_one_package_and_a_horovod_job_is_free():
    found = _scan(WORKFLOW, ".github/workflows/gpu.yml", "yaml")
    gpu = [f for f in found if f.line < 10]
    hvd = [f for f in found if f.line >= 10]
    assert len({f.rule for f in gpu}) >= 3 and {f.decision for f in gpu} == {4}
    assert hvd and all(f.npu_aware and f.fix is None for f in hvd)
    paid = [p for p in _effort(found).packages if p.minutes]
    assert len(paid) == 1 and paid[0].findings == len(gpu) and paid[0].minutes == 60


DOCKERFILE = """\
FROM pytorch/pytorch:2.4.0-cuda12.1-cudnn9-devel
ENV CUDA_HOME=/usr/local/cuda
RUN git clone https://github.com/NVIDIA/apex && cd apex && pip install -v .
ENV NCCL_DEBUG=INFO
"""


def test_a_container_image_is_one_package_and_a_horovod_image_is_free():
    found = _scan(DOCKERFILE, "docker/Dockerfile", "docker")
    assert len({f.rule for f in found}) >= 2 and {f.decision for f in found} == {1}
    per_image = [p for p in _effort(found).packages if p.minutes and p.rules != ["MIG722"]]
    assert len(per_image) == 1, [p.name for p in per_image]
    hvd = _scan(DOCKERFILE + "RUN pip install horovod[pytorch]\n", "docker/Dockerfile.hvd", "docker")
    assert hvd and all(f.npu_aware for f in hvd) and _effort(hvd).minutes == 0


def _notebook(tmp_path, name: str, cells: list[str]):
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": i, "source": src}
            for i, src in enumerate(cells, 1)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / name).write_text(json.dumps(nb, indent=1))


def test_a_notebooks_suggested_edits_are_one_package_per_notebook(tmp_path):
    _notebook(
        tmp_path,
        "train.ipynb",
        [
            'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n',
            "model = model.to(device)\ntorch.cuda.empty_cache()\n",
            "scaler = torch.amp.GradScaler()\n",
        ],
    )
    _notebook(tmp_path, "eval.ipynb", ["import torch\nx = torch.ones(2).cuda()\n"])
    found = scan_paths([tmp_path], ScanOptions(jobs=1)).findings
    assert len({f.rule for f in found if f.path == "train.ipynb"}) >= 3
    assert all(f.category == "manual" and f.fix is None for f in found)  # apply leaves notebooks alone
    effort = _effort(found)
    assert sorted((p.paths[0], p.findings) for p in effort.packages) == [
        ("eval.ipynb", 1),
        ("train.ipynb", len([f for f in found if f.path == "train.ipynb"])),
    ]
    assert {p.minutes for p in effort.packages} == {20} and effort.minutes == 40


def test_apex_amp_initialize_and_scale_loss_are_one_library_package():
    code = """
    from apex import amp


    def train(model, optimizer, loss):
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
        with amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
    """
    found = _scan(code) + _scan(code, "n.py")
    assert {"MIG501", "MIG502"} <= {f.rule for f in found}
    apex = [p for p in _effort(found).packages if "apex" in p.name]
    assert len(apex) == 1 and apex[0].paths == ["m.py", "n.py"]
    assert apex[0].minutes == 60 + 15  # one library, 15 min for the second file


def test_a_cuda_variable_kept_for_cuda_hosts_costs_minutes_not_an_hour():
    found = _scan('CUDA_VISIBLE_DEVICES="" pytest tests/\n', "run_cpu_tests.sh", "shell")
    (f,) = found
    assert f.rule == "MIG701" and f.category == "manual"  # portable keeps it for CUDA hosts
    assert _effort(found).minutes == 10
