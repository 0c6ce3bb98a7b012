"""A word-level RNN language model script (scripts/word_lm: a `--cuda` flag, truncated BPTT,
clipping, SGD on `p.data`, `torch.save(model)` and back) ported with `migrate apply`, then
run as a user runs it: the port on this CPU host gives the original's losses exactly, and
under `migrate run --emulate npu -- python main.py --cuda` its parameters are on the NPU, it
finishes, its losses are the CPU's within tolerance, and the run reports the fallbacks
`migrate ops --torch --train` lists for the same model."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "scripts" / "word_lm"
ARGS = ["--epochs", "2"]


def run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((str(ROOT), str(HERE / "scripts"))),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def recorded(cwd: Path, *args: str, emulate: Path | None = None) -> dict:
    """The script's recorded losses and parameter devices (record.py), run plainly or under
    `migrate run --emulate npu --report EMULATE`."""
    prefix = (
        [sys.executable]
        if emulate is None
        else [
            sys.executable,
            "-m",
            "migrate",
            "run",
            "--emulate",
            "npu",
            "--report",
            str(emulate),
            "--",
            "python",
        ]
    )
    out = cwd / ("npu.json" if emulate else "cpu.json")
    proc = run([*prefix, str(HERE / "record.py"), str(out), "main.py", *args], cwd)
    return {**json.loads(out.read_text()), "stdout": proc.stdout}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """The original's run of one model, made when a test first asks for it."""

    @functools.cache
    def of(model: str) -> dict:
        work = tmp_path_factory.mktemp(f"word_lm_orig_{model}")
        shutil.copytree(SCRIPT, work, dirs_exist_ok=True)
        return recorded(work, *ARGS, "--model", model)

    return of


@pytest.fixture(scope="module")
def ops_fallbacks() -> set[str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "ops",
            "--torch",
            "word_lm.main:build",
            "--train",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(HERE / "scripts")))},
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    rows = json.loads(proc.stdout)["ops"]
    assert any(r["op"] == "aten::lstm.input" and r["status"] == "supported" for r in rows)
    return {r["op"] for r in rows if r["status"] == "cpu-fallback"}


@pytest.mark.parametrize(
    ("target", "model"),
    [pytest.param("portable", "LSTM", marks=pytest.mark.pinned_torch), ("npu", "GRU")],
)
def test_ported_language_model_trains_on_cpu_and_on_the_emulated_npu(
    tmp_path, original, ops_fallbacks, target, model
):
    work = tmp_path / "word_lm"
    shutil.copytree(SCRIPT, work)
    run(
        [
            sys.executable,
            "-m",
            "migrate",
            "apply",
            "--target",
            target,
            "--no-cache",
            "--no-progress",
            str(work),
        ],
        ROOT,
    )
    want = original(model)
    assert want["param_devices"] == ["cpu"] and len(want["losses"]) >= 20
    if target == "portable":  # still runs where it ran: the CPU, the original's numbers
        assert recorded(work, *ARGS, "--model", model)["losses"] == want["losses"]
    report_path = tmp_path / "report.json"
    got = recorded(work, *ARGS, "--model", model, "--cuda", emulate=report_path)
    assert got["param_devices"] == ["npu"], got
    assert "parameters on npu" in got["stdout"]
    assert got["losses"] == pytest.approx(want["losses"], rel=1e-5)
    report = json.loads(report_path.read_text())
    assert report["exit_code"] == 0
    assert report["ops"][f"aten::{model.lower()}.input"] > 0  # torch_npu's own kernel
    assert not any(op.startswith("aten::_thnn_fused") for op in report["ops"])
    emulated = {f["op"] for f in report["findings"] if f["kind"] == "cpu_fallback"}
    assert emulated == ops_fallbacks
