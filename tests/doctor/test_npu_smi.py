"""``npu-smi info`` on the host under test: found on its PATH under --root, run, its table
parsed (the samples in data/ have the layout real hosts print: npu-smi 25.2.0 on 910B2,
26.0.rc2 on an A3 with two chips per NPU, as pasted in vllm-project/vllm-ascend issues 4284
and 12980), and each chip's health, memory and processes judged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate.doctor import npusmi

DATA = Path(__file__).parent / "data"


def sample(name: str) -> str:
    return (DATA / f"npu_smi_{name}.txt").read_text()


def _ready(host, fpy):
    host.ready()
    fpy.torch()
    fpy.torch_npu()


def _ok_table() -> str:
    lines = [
        line
        for line in sample("910b")
        .replace("Warning", "OK     ")
        .replace("58211/ 65536", "3378 / 65536")
        .splitlines()
        if "118734" not in line
    ]
    return "\n".join(lines) + "\n"


def test_parse_910b():
    info = npusmi.parse(sample("910b"))
    assert info.version == "25.2.0"
    assert [(c.npu, c.chip, c.name, c.health) for c in info.chips] == [
        (0, 0, "910B2", "OK"),
        (1, 0, "910B2", "Warning"),
        (2, 0, "910B2", "OK"),
    ]
    assert [(c.memory_used, c.memory_total, c.bus) for c in info.chips][2] == (58211, 65536, "0000:81:00.0")
    assert [(p.npu, p.chip, p.pid, p.name, p.memory) for p in info.processes] == [
        (2, 0, 118734, "python3", 54823)
    ]


def test_parse_a3_two_chips_per_npu():
    info = npusmi.parse(sample("a3"))
    assert info.version == "26.0.rc2"
    assert [(c.npu, c.chip, c.health, c.memory_used) for c in info.chips] == [
        (0, 0, "OK", 3421),
        (0, 1, "Alarm", 2870),
    ]
    assert info.processes == []


def test_parse_ignores_what_is_not_a_table():
    assert npusmi.parse("dcmi module initialize failed. ret is -8005\n").chips == []
    assert npusmi.parse("| 0 | x |\n| y |\n").chips == []


def test_healthy_host(host, fpy, doctor):
    _ready(host, fpy)
    host.npu_smi(_ok_table())
    code, checks = doctor.checks("--no-import")
    smi = checks["npu-smi"]
    assert smi["status"] == "ok", smi
    assert smi["summary"] == "npu-smi: 3 chip(s) healthy, memory free"
    assert smi["evidence"][0] == "/usr/local/sbin/npu-smi 25.2.0"  # the host's path
    assert "NPU 0 chip 0: 910B2, health OK, memory 3380 / 65536 MB, bus 0000:C1:00.0" in smi["evidence"]


def test_warning_health_busy_chip_and_a_process(host, fpy, doctor):
    _ready(host, fpy)
    host.npu_smi(sample("910b"))
    code, checks = doctor.checks("--no-import")
    smi = checks["npu-smi"]
    assert code == 0 and smi["status"] == "warn", smi
    assert "NPU 1 chip 0 health Warning" in smi["summary"]
    assert "NPU 2 chip 0 has 58211 of 65536 MB in use" in smi["summary"]
    assert "pid 118734 (python3) uses 54823 MB on NPU 2 chip 0" in smi["evidence"]
    assert smi["fix"].splitlines()[0] == "npu-smi info -t health -i 1 -c 0"


def test_an_alarm_fails(host, fpy, doctor):
    _ready(host, fpy)
    host.npu_smi(sample("a3"))
    code, checks = doctor.checks("--no-import")
    smi = checks["npu-smi"]
    assert code == 1 and smi["status"] == "fail"
    assert smi["summary"] == "unhealthy NPU chip(s): NPU 0 chip 1 Alarm"
    assert smi["fix"].splitlines()[0] == "npu-smi info -t health -i 0 -c 1"


def test_npu_smi_that_fails(host, fpy, doctor):
    _ready(host, fpy)
    host.npu_smi("", code=1, stderr="dcmi module initialize failed. ret is -8005")
    code, checks = doctor.checks("--no-import")
    smi = checks["npu-smi"]
    assert smi["status"] == "fail" and smi["fix"]
    assert "dcmi module initialize failed. ret is -8005" in smi["evidence"]


def test_npu_smi_that_hangs(host, fpy, doctor, monkeypatch):
    monkeypatch.setattr(npusmi, "TIMEOUT", 1.0)
    _ready(host, fpy)
    host.npu_smi(_ok_table(), sleep=20)
    code, checks = doctor.checks("--no-import")
    assert checks["npu-smi"]["status"] == "fail"
    assert "did not answer in 1 s" in checks["npu-smi"]["summary"]


def test_npu_smi_of_this_machine_is_not_the_hosts(host, fpy, doctor, tmp_path):
    """An npu-smi at a PATH entry that exists here but not under the root is not run."""
    _ready(host, fpy)
    here = tmp_path / "bin"
    here.mkdir()
    (here / "npu-smi").write_text("#!/bin/sh\necho '| 0 910B2 | OK | 1 |'\n")
    (here / "npu-smi").chmod(0o755)
    host.env["PATH"] = f"{here}:{host.env['PATH']}"
    code, checks = doctor.checks("--no-import")
    assert checks["npu-smi"]["status"] == "skip"


@pytest.mark.parametrize("name", ["910b", "a3"])
def test_every_chip_row_is_parsed(name):
    """Each chip prints a Bus-Id: the parser finds as many chips as the table has buses."""
    text = sample(name)
    buses = re.findall(r"\b[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F]\b", text)
    assert len(npusmi.parse(text).chips) == len(buses) > 0


def test_a_flood_of_output_is_quoted_bounded(host, fpy, doctor):
    # an npu-smi that prints one endless line: the evidence quotes its start, not all of it
    from migrate.doctor.report import EVIDENCE_CHARS, _clip

    _ready(host, fpy)
    host.npu_smi("x" * 200_000 + "\n")
    code, checks = doctor.checks("--no-import")
    smi = checks["npu-smi"]
    assert smi["status"] == "warn"
    assert max(len(e) for e in smi["evidence"]) <= 1000
    shown = _clip(smi["evidence"][-1])
    assert len(shown) < EVIDENCE_CHARS + 40 and shown.endswith("more characters)")
