"""`migrate doctor` on fake hosts: a ready host, and each way users report a host not being
ready (version mismatches, unsourced environment, CUDA torch beside torch_npu, missing
libraries). Device selection, device nodes, leftover processes and the import probe:
test_doctor_devices.py."""

from __future__ import annotations

import os
import re

import pytest
from fakehost import ready_host


def test_a_ready_host_isready_host(host, fpy, doctor):
    ready_host(host, fpy)
    code, checks = doctor.checks()
    assert code == 0, {k: v["summary"] for k, v in checks.items() if v["status"] == "fail"}
    for cid in (
        "python",
        "torch",
        "torch-npu",
        "torch-pin",
        "autoload",
        "import",
        "cann-toolkit",
        "cann-pairing",
        "driver",
        "firmware",
        "set-env",
        "libraries",
        "device-nodes",
        "visible-devices",
        "cann-python-deps",
    ):
        assert checks[cid]["status"] == "ok", (cid, checks[cid])
    assert "8 NPU(s) available" in checks["import"]["summary"]
    assert checks["cann-pairing"]["sources"] == ["torch-npu==2.14.0:torch_npu-2.14.0.dist-info/METADATA"]


def test_text_report_starts_each_line_with_the_verdict(host, fpy, doctor):
    ready_host(host, fpy)
    code, text, _ = doctor.run()
    _, checks = doctor.checks()
    assert code == 0
    n = {s: sum(c["status"] == s for c in checks.values()) for s in ("ok", "skip")}
    assert text.rstrip().endswith(f"ready: 0 failed, 0 warnings, {n['ok']} ok, {n['skip']} skipped")
    rows = {
        m.group(2): (m.group(1), m.start(3) - m.start())
        for m in re.finditer(r"^  (ok|WARN|FAIL|skip) +(\S+) +(.*)$", text, re.M)
    }
    assert rows.keys() == checks.keys()  # one line per check, each starting with its verdict
    assert rows["cann-pairing"][0] == "ok"
    assert re.search(
        r"^  ok +cann-pairing +CANN 9\.1\.0 is the release published for torch_npu 2\.14\.0$", text, re.M
    )
    assert len({column for _, column in rows.values()}) == 1  # summaries aligned, at any width


def test_unsourced_environment_names_the_script_to_source(host, fpy, doctor):
    host.cann("9.1.0")  # installed, set_env.sh not sourced
    host.driver(on_path=False)
    host.devices()
    fpy.torch("2.14.0+cpu")
    fpy.torch_npu()
    code, checks = doctor.checks()
    assert code == 1
    script = "/usr/local/Ascend/cann/set_env.sh"  # as the host under test names it
    assert checks["set-env"]["status"] == "fail"
    assert checks["set-env"]["fix"] == f"source {script}"
    assert "ASCEND_HOME_PATH is not set" in checks["set-env"]["evidence"]
    libs = checks["libraries"]
    assert libs["status"] == "fail" and "libhccl.so" in libs["summary"]
    assert f"source {script}" in libs["fix"]
    driver_dirs = ":".join(
        host.named(host.ascend / d) for d in ("driver/lib64", "driver/lib64/common", "driver/lib64/driver")
    )
    assert f"export LD_LIBRARY_PATH={driver_dirs}:$LD_LIBRARY_PATH" in libs["fix"]
    # the real import fails the way torch_npu does, and the doctor says why
    imp = checks["import"]
    assert imp["status"] == "fail" and imp["summary"] == "import torch failed"
    assert any("Failed to load the backend extension: torch_npu" in e for e in imp["evidence"])
    assert any(e.startswith("libhccl-missing:") for e in imp["evidence"])
    # the toolkit is still found at its default place
    assert checks["cann-toolkit"]["status"] == "ok"
    assert "found through: default location" in checks["cann-toolkit"]["evidence"]


def test_cann_8_layout_sources_ascend_toolkit_set_env(host, fpy, doctor):
    home = host.cann("8.0.0", home="ascend-toolkit/latest")
    fpy.torch("2.4.0+cpu")
    fpy.torch_npu("2.4.0.post2", "==2.4.0")
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["fix"] == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert checks["cann-toolkit"]["summary"] == f"CANN 8.0.0 at {host.named(home)}"
    assert checks["cann-pairing"]["status"] == "ok"


def test_cuda_torch_beside_torch_npu(host, fpy, doctor):
    host.ready()
    fpy.torch("2.14.0", cuda="12.8")
    fpy.torch_npu()
    code, checks = doctor.checks()
    assert code == 1
    torch = checks["torch"]
    assert torch["status"] == "fail" and "CUDA 12.8" in torch["summary"]
    assert torch["fix"].startswith("pip install 'torch==2.14.0+cpu' --index-url ")
    imp = checks["import"]
    assert imp["status"] == "fail"
    assert any(e.startswith("two-accelerators:") for e in imp["evidence"])


def test_cuda_torch_on_aarch64_gets_the_plain_pin(host, fpy, doctor, monkeypatch):
    import migrate.doctor.context as context

    host.ready()
    fpy.torch("2.14.0", cuda="12.8")
    fpy.torch_npu()
    monkeypatch.setattr(context.Context, "arch", property(lambda self: "aarch64"))
    code, checks = doctor.checks("--no-import")
    assert checks["torch"]["fix"] == "pip install 'torch==2.14.0'"


def test_torch_that_torch_npu_does_not_pin(host, fpy, doctor):
    host.ready()
    fpy.torch("2.13.0+cpu")
    fpy.torch_npu("2.14.0", "==2.14.0.*")
    fpy.dist("torchvision", "0.28.0", ["torch==2.13.0", "numpy"])
    fpy.dist("peft", "0.17.0", ["torch>=1.13.0"])  # fits any torch: not listed
    code, checks = doctor.checks("--no-import")
    pin = checks["torch-pin"]
    assert code == 1 and pin["status"] == "fail"
    assert pin["summary"] == ("torch 2.13.0+cpu does not fit torch_npu 2.14.0 (torch==2.14.0.*)")
    assert pin["fix"].splitlines()[0].startswith("pip install 'torch==2.14.0+cpu'")
    assert "torchvision 0.28.0 (requires torch==2.13.0)" in pin["fix"]
    assert "peft" not in pin["fix"]


def test_torch_npu_missing_gets_the_release_for_the_installed_torch(host, fpy, doctor):
    host.ready()
    fpy.torch("2.14.0+cpu")
    code, checks = doctor.checks()
    assert checks["torch-npu"]["status"] == "fail"
    assert checks["torch-npu"]["fix"] == "pip install 'torch-npu==2.14.0'"
    assert checks["import"]["status"] == "skip"


def test_torch_npu_missing_for_a_torch_without_a_release(host, fpy, doctor):
    host.ready()
    fpy.torch("2.15.0+cpu")
    code, checks = doctor.checks("--no-import")
    fix = checks["torch-npu"]["fix"].splitlines()
    assert fix[0].startswith("pip install 'torch==2.14.0+cpu'")
    assert fix[1] == "pip install 'torch-npu==2.14.0'"


def test_cann_older_than_published_fails_with_both_ways_out(host, fpy, doctor):
    ready_host(host, fpy, cann="8.5.0", torch="2.9.0+cpu", npu="2.9.0.post6", pin="==2.9.0.*")
    code, checks = doctor.checks("--no-import")
    pair = checks["cann-pairing"]
    assert code == 1 and pair["status"] == "fail"
    assert "older than the CANN 9.1.0" in pair["summary"]
    assert pair["fix"].splitlines() == [
        "install CANN 9.1.0",
        "or keep CANN 8.5.0 and pip install 'torch-npu==2.9.0' (published for it)",
    ]


def test_cann_newer_than_published_is_a_warning(host, fpy, doctor):
    ready_host(host, fpy, cann="9.1.0", torch="2.9.0+cpu", npu="2.9.0", pin="==2.9.0.*")
    code, checks = doctor.checks("--no-import")
    pair = checks["cann-pairing"]
    assert code == 0 and pair["status"] == "warn"
    assert "torch-npu==2.9.0.post6" in pair["fix"]


def test_a_torch_npu_build_outside_the_table(host, fpy, doctor):
    ready_host(host, fpy, cann="9.1.0", torch="2.9.0+cpu", npu="2.9.0.post1+gitdc51c2d", pin="==2.9.0.*")
    code, checks = doctor.checks("--no-import")
    pair = checks["cann-pairing"]
    assert pair["status"] == "warn" and "no published pairing" in pair["summary"]
    assert "torch-npu==2.9.0.post6" in pair["fix"]


def test_kernels_of_another_release(host, fpy, doctor):
    home = ready_host(host, fpy, cann="8.3.RC1", torch="2.8.0+cpu", npu="2.8.0", pin="==2.8.0.*")
    host.kernels(home, "8.2.RC1", ">=7.6, <=8.2")
    code, checks = doctor.checks("--no-import")
    kern = checks["cann-kernels"]
    assert code == 1 and kern["status"] == "fail"
    assert kern["summary"] == "kernels of CANN 8.2.RC1 beside toolkit 8.3.RC1"


def test_kernels_that_match(host, fpy, doctor):
    home = ready_host(host, fpy, cann="8.3.RC1", torch="2.8.0+cpu", npu="2.8.0", pin="==2.8.0.*")
    host.kernels(home, "8.3.RC1.alpha001", ">=7.6, <=8.3")
    code, checks = doctor.checks("--no-import")
    assert checks["cann-kernels"]["status"] == "ok"


def test_kernels_missing_on_cann_8_is_a_warning(host, fpy, doctor):
    ready_host(host, fpy, cann="8.3.RC1", torch="2.8.0+cpu", npu="2.8.0", pin="==2.8.0.*")
    code, checks = doctor.checks("--no-import")
    assert checks["cann-kernels"]["status"] == "warn"
    assert "EZ3003" in " ".join(checks["cann-kernels"]["evidence"])


def test_no_driver(host, fpy, doctor):
    home = host.cann()
    host.source(home)
    host.devices()
    fpy.torch()
    fpy.torch_npu()
    code, checks = doctor.checks("--no-import")
    assert checks["driver"]["status"] == "fail"
    assert "mount /usr/local/Ascend/driver" in checks["driver"]["fix"]
    assert checks["firmware"]["status"] == "skip"
    assert "libascend_hal.so" in checks["libraries"]["summary"]


def test_firmware_outside_the_drivers_range(host, fpy, doctor):
    ready_host(host, fpy)
    host.driver(fw_range="[7.0.0,7.2.99]")
    code, checks = doctor.checks("--no-import")
    fw = checks["firmware"]
    assert fw["status"] == "warn" and "outside the range" in fw["summary"]


def test_nnal_installed_but_not_sourced(host, fpy, doctor):
    ready_host(host, fpy)
    host.nnal(on_path=False)
    code, checks = doctor.checks("--no-import")
    libs = checks["libraries"]
    assert code == 0 and libs["status"] == "warn"
    assert libs["fix"] == "source /usr/local/Ascend/nnal/atb/set_env.sh"


def test_library_floors_from_the_scan_rules(host, fpy, doctor):
    ready_host(host, fpy)
    fpy.dist("transformers", "4.30.2", ["torch>=1.9"])
    fpy.dist("accelerate", "0.30.1", [])
    code, checks = doctor.checks("--no-import")
    floors = checks["npu-floors"]
    assert code == 1 and floors["status"] == "fail"
    assert floors["fix"] == "pip install 'transformers>=4.32.0'"
    assert "accelerate 0.30.1 (NPU support since 0.21.0)" in floors["evidence"]
    assert floors["sources"] == ["rules/dependency_compat.yaml MIG752"]


def test_project_pins(host, fpy, doctor, tmp_path):
    ready_host(host, fpy)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "requirements.txt").write_text("torch==2.1.0\ntransformers==4.30.2\n")
    code, checks = doctor.checks("--no-import", "--project", str(project))
    pins = checks["project-pins"]
    assert pins["status"] == "warn"
    rules = {e.split()[1] for e in pins["evidence"]}
    assert rules == {"MIG750", "MIG751", "MIG752"}


def test_python_as_a_virtualenv_folder(host, fpy, doctor):
    ready_host(host, fpy)
    code, checks = doctor.checks("--no-import", "--python", str(fpy.venv))
    assert checks["torch-npu"]["status"] == "ok"


def test_the_doctor_changes_nothing(host, fpy, doctor):
    ready_host(host, fpy)
    host.process(77, "python x.py", [0])

    def snapshot():
        out = {}
        for top in (host.base,):
            for dirpath, dirnames, filenames in os.walk(top):
                for name in dirnames + filenames:
                    p = os.path.join(dirpath, name)
                    st = os.lstat(p)
                    out[p] = (st.st_mode, st.st_size, st.st_mtime_ns)
        return out

    before = snapshot()
    doctor.checks()
    assert snapshot() == before


@pytest.mark.parametrize(
    "args,message",
    [
        (["--python", "/nonexistent/python"], "not an executable Python interpreter"),
        (["--timeout", "0"], "--timeout 0: must be more than 0"),
        (["--format", "sarif"], "--format sarif: choose one of text, json"),
        (["--project", "/nonexistent/project"], "no such file or folder"),
    ],
)
def test_usage_errors(host, fpy, doctor, args, message):
    from typer.testing import CliRunner

    from migrate.cli import app
    from migrate.core.errors import UsageError

    result = CliRunner().invoke(app, ["doctor", "--root", str(host.root), *args])
    assert isinstance(result.exception, UsageError) and message in str(result.exception)


def test_json_report_shape(host, fpy, doctor):
    """docs/contracts.md §8."""
    ready_host(host, fpy)
    code, data, _ = doctor.run("--format", "json", "--no-import")
    assert set(data) == {"tool", "ready", "python", "root", "checks", "summary"}
    assert data["ready"] is True and data["root"] == str(host.root)
    assert set(data["python"]) >= {"executable", "version", "machine"}
    assert set(data["summary"]) == {"ok", "warn", "fail", "skip"}
    for check in data["checks"]:
        assert set(check) == {"id", "group", "status", "summary", "evidence", "fix", "sources"}
        assert check["status"] in ("ok", "warn", "fail", "skip")
        assert check["group"] in ("python", "cann", "environment", "devices", "libraries")


def test_the_command_exits_1_when_notready_host(tmp_path, fpy):
    """The real entry point, in a subprocess, on an empty root."""
    import subprocess
    import sys

    (tmp_path / "root").mkdir()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "doctor",
            "--root",
            str(tmp_path / "root"),
            "--python",
            fpy.python,
            "--no-import",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )
    assert res.returncode == 1, res.stderr
    assert res.stdout.rstrip().splitlines()[-1].startswith("not ready: ")
    assert "FAIL  torch" in res.stdout


def test_home_path_unset_with_the_rest_set_only_warns(host, fpy, doctor):
    """torch_npu only warns without ASCEND_HOME_PATH (registry_manager.py); without
    ASCEND_OPP_PATH operators fail, and a variable naming a missing folder fails the import."""
    ready_host(host, fpy)
    del host.env["ASCEND_HOME_PATH"]
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["status"] == "warn"
    host.env["ASCEND_OPP_PATH"] = str(host.base / "gone")
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["status"] == "fail"


def test_home_path_without_runtime_fails(host, fpy, doctor):
    home = ready_host(host, fpy)
    (home / "runtime").rmdir()
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["status"] == "fail"
    assert (
        "$ASCEND_HOME_PATH/runtime does not exist (a CANN package is missing)"
        in checks["set-env"]["evidence"]
    )


def test_an_interpreter_that_answers_nonsense(host, doctor, tmp_path):
    """A --python that is not Python (or prints junk) is reported, not a crash."""
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\necho \'@@MIGRATE-DOCTOR@@{"dists": {"torch": {"version": 3, '
        '"requires": "x", "entry_points": [1, ["a"]]}}, "dependents": [1]}\'\n'
    )
    fake.chmod(0o755)
    code, checks = doctor.checks("--python", str(fake), "--no-import")
    assert code == 1
    assert checks["torch"]["summary"].startswith("torch 3,")
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho hello; exit 3\n")
    broken.chmod(0o755)
    code, checks = doctor.checks("--python", str(broken), "--no-import")
    assert checks["python"]["status"] == "fail"
    assert "exited with 3" in checks["python"]["evidence"][0]


def test_cann_python_dependencies_missing(host, fpy, doctor):
    host.ready()
    fpy.torch()
    fpy.torch_npu()
    fpy.cann_deps(skip=("decorator", "absl-py"))
    code, checks = doctor.checks("--no-import")
    deps = checks["cann-python-deps"]
    assert code == 0 and deps["status"] == "warn"
    assert deps["fix"] == "pip install decorator absl-py"


def test_a_container_without_the_driver_record(host, fpy, doctor):
    """vllm-ascend's docker run mounts driver/lib64 and driver/version.info; with only the
    libraries mounted the driver is there but its version cannot be read: a warning."""
    ready_host(host, fpy)
    (host.ascend / "driver/version.info").unlink()
    code, checks = doctor.checks("--no-import")
    assert code == 0 and checks["driver"]["status"] == "warn"
    assert "mount /usr/local/Ascend/driver/version.info" in checks["driver"]["fix"]
