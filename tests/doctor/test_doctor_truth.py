"""The doctor does not take look-alikes for the real thing (a regular file is not a device
node, a 0-byte or foreign file is not a shared library), every FAIL names its fix, and the
checks that recommend a torch recommend the same one."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from fakehost import elf_header

from migrate.doctor.checks import ordered
from migrate.doctor.report import Outcome


def _ready(host, fpy):
    home = host.ready()
    fpy.torch()
    fpy.torch_npu()
    fpy.cann_deps()
    return home


def test_regular_files_are_not_device_nodes(host, fpy, doctor):
    _ready(host, fpy)
    for i in range(8):
        (host.root / f"dev/davinci{i}").unlink()
        host.write(f"dev/davinci{i}", "", mode=0o666)  # regular files by the same names
    code, checks = doctor.checks("--no-import")
    nodes = checks["device-nodes"]
    assert nodes["status"] == "fail" and nodes["fix"]
    assert "/dev/davinci0 is not a character device (a regular file of 0 bytes)" in " ".join(
        nodes["evidence"]
    )
    assert checks["visible-devices"]["status"] == "skip"


def test_a_shared_node_that_is_a_folder_is_missing(host, fpy, doctor):
    _ready(host, fpy)
    (host.root / "dev/hisi_hdc").unlink()
    (host.root / "dev/hisi_hdc").mkdir()
    code, checks = doctor.checks("--no-import")
    nodes = checks["device-nodes"]
    assert nodes["status"] == "fail" and "hisi_hdc" in nodes["summary"]
    assert "/dev/hisi_hdc is not a character device (a folder)" in " ".join(nodes["evidence"])


@pytest.mark.parametrize(
    "content,why",
    [
        (b"", "an empty file (0 bytes)"),
        (b"INPUT(-lascendcl_real)\n", "not an ELF file"),  # a linker script
        (elf_header("aarch64"), "built for aarch64, this host is x86_64"),
    ],
)
def test_a_library_must_be_an_elf_file_of_this_host(host, fpy, doctor, content, why):
    home = _ready(host, fpy)
    (home / "lib64/libascendcl.so").write_bytes(content)
    code, checks = doctor.checks("--no-import")
    libs = checks["libraries"]
    assert libs["status"] == "fail" and "libascendcl.so" in libs["summary"], libs
    passed = [e for e in libs["evidence"] if e.startswith("passed over: ")]
    assert passed == [f"passed over: /usr/local/Ascend/cann/lib64/libascendcl.so: {why}"] or why in passed[0]
    assert "reinstall the CANN toolkit at /usr/local/Ascend/cann" in libs["fix"]


def test_a_real_library_later_on_the_path_is_taken(host, fpy, doctor):
    """The loader passes over a file that is not a shared library and takes the next one."""
    home = _ready(host, fpy)
    (home / "lib64/libhccl.so").write_bytes(b"")
    host.library(host.root / "opt/hccl/libhccl.so")
    host.env["LD_LIBRARY_PATH"] += ":/opt/hccl"
    code, checks = doctor.checks("--no-import")
    libs = checks["libraries"]
    assert libs["status"] == "ok", libs
    assert "libhccl.so: /opt/hccl/libhccl.so (via LD_LIBRARY_PATH)" in libs["evidence"]


def test_an_outcome_cannot_fail_without_a_fix():
    with pytest.raises(ValueError, match="names its fix"):
        Outcome("fail", "broken", ["x"])
    with pytest.raises(ValueError, match="names its fix"):
        Outcome("fail", "broken", fix="  ")
    assert Outcome("warn", "odd").fix is None


def _broken_hosts(host, fpy):
    """Faked hosts, each broken in ways that make checks fail; yields (label, extra args)."""
    yield "empty host, nothing installed", ()
    fpy.torch("2.14.1+cu130", cuda="13.0")
    fpy.dist("transformers", "4.20.0")
    yield "CUDA torch, no torch_npu, no CANN", ()
    fpy.torch_npu("2.14.0", "==2.14.0.*")
    home = host.cann("9.0.0")
    host.kernels(home, "8.3.RC1")
    host.devices(2, shared=False)
    host.env["ASCEND_RT_VISIBLE_DEVICES"] = "5,6"
    host.env["ASCEND_OPP_PATH"] = "/nowhere"
    host.npu_smi((Path(__file__).parent / "data/npu_smi_a3.txt").read_text())
    yield "old CANN, foreign kernels, no driver, unsourced, a chip in Alarm", ()
    host.write("usr/local/Ascend/driver/version.info", "")
    (host.root / "usr/local/Ascend/driver/version.info").unlink()
    (host.root / "usr/local/Ascend/driver/version.info").mkdir()
    broken = host.write(host.base / "broken-python", "#!/bin/sh\nexit 3\n", mode=0o755)
    yield "a driver record that is a folder, an interpreter that cannot answer", ("--python", str(broken))


def test_every_fail_names_its_fix_and_every_check_that_can_fail_is_seen(host, fpy, doctor):
    failed: dict[str, str] = {}
    for label, args in _broken_hosts(host, fpy):
        code, checks = doctor.checks(*args)
        for cid, check in checks.items():
            if check["status"] == "fail":
                assert check["fix"] and check["fix"].strip(), (label, cid, check)
                failed.setdefault(cid, label)
    can_fail = {name for name, fn, _ in ordered() if re.search(r"\"fail\"|fail\(", inspect.getsource(fn))}
    assert can_fail - set(failed) == set(), f"checks never made to fail here: {can_fail - set(failed)}"


PIN = re.compile(r"pip install 'torch==([^'+]+)")


@pytest.mark.parametrize(
    "torch,npu",
    [
        ("2.14.1+cu130", None),  # no torch_npu for 2.14.1: both checks name 2.14.0
        ("2.14.1+cu130", "2.14.0"),
        ("2.99.0+cu130", None),  # a torch no torch_npu is published for
        (None, None),
    ],
)
def test_one_torch_pin_across_checks(host, fpy, doctor, torch, npu):
    host.ready()
    if torch:
        fpy.torch(torch, cuda="13.0")
    if npu:
        fpy.torch_npu(npu, "==2.14.0.*")
    code, checks = doctor.checks("--no-import")
    pins = {cid: PIN.findall(c["fix"] or "") for cid, c in checks.items() if c["id"].startswith("torch")}
    named = {v for found in pins.values() for v in found}
    assert len(named) == 1, pins
    npu_pin = re.findall(r"torch-npu==([\w.]+)", " ".join(c["fix"] or "" for c in checks.values()))
    assert len(set(npu_pin)) <= 1 and named == {"2.14.0"}, (pins, npu_pin)
