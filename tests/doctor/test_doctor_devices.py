"""`migrate doctor` on fake hosts: the devices (selection, device nodes, leftover
processes) and the import probe (autoload, a hanging or crashing import, CANN logs)."""

from __future__ import annotations

import pytest
from fakehost import ready_host


@pytest.mark.parametrize(
    "value,status,fix",
    [
        ("0,1,2", "ok", None),
        ("1,0", "fail", "export ASCEND_RT_VISIBLE_DEVICES=0,1"),
        ("0,0", "fail", "export ASCEND_RT_VISIBLE_DEVICES=0"),
        ("0,9", "fail", "export ASCEND_RT_VISIBLE_DEVICES=0"),
        ("", "fail", "export ASCEND_RT_VISIBLE_DEVICES=0 (or unset it)"),
        ("0,1 ", "warn", "export ASCEND_RT_VISIBLE_DEVICES=0,1"),
        ("0-3", "warn", "export ASCEND_RT_VISIBLE_DEVICES=0"),
    ],
)
def test_visible_devices(host, fpy, doctor, value, status, fix):
    ready_host(host, fpy)
    host.env["ASCEND_RT_VISIBLE_DEVICES"] = value
    code, checks = doctor.checks("--no-import")
    vis = checks["visible-devices"]
    assert vis["status"] == status, vis
    assert vis["fix"] == fix


def test_cuda_visible_devices_does_not_select_npus(host, fpy, doctor):
    ready_host(host, fpy)
    host.env["CUDA_VISIBLE_DEVICES"] = "2,3"
    code, checks = doctor.checks("--no-import")
    vis = checks["visible-devices"]
    assert vis["status"] == "warn"
    assert vis["fix"] == "export ASCEND_RT_VISIBLE_DEVICES=2,3"


def test_no_device_nodes(host, fpy, doctor):
    home = host.cann()
    host.source(home)
    host.driver()
    fpy.torch()
    fpy.torch_npu()
    code, checks = doctor.checks()
    assert checks["device-nodes"]["status"] == "fail"
    assert "--device /dev/davinci_manager" in checks["device-nodes"]["fix"]
    assert checks["import"]["status"] == "fail"  # is_available() is False
    assert checks["visible-devices"]["status"] == "skip"


def test_shared_device_nodes_missing(host, fpy, doctor):
    ready_host(host, fpy)
    (host.root / "dev/devmm_svm").unlink()
    code, checks = doctor.checks("--no-import")
    assert checks["device-nodes"]["status"] == "fail"
    assert "devmm_svm" in checks["device-nodes"]["summary"]


def test_a_leftover_process_holding_a_device(host, fpy, doctor):
    ready_host(host, fpy)
    host.process(4242, "python train.py --lr 1e-4", [0, 1])
    host.process(4243, "bash", [])
    code, checks = doctor.checks("--no-import")
    held = checks["device-holders"]
    assert code == 0 and held["status"] == "warn"
    assert held["evidence"][0] == "pid 4242 holds davinci0, davinci1: python train.py --lr 1e-4"
    assert "kill 4242" in held["fix"]


def test_autoload_switched_off(host, fpy, doctor):
    ready_host(host, fpy)
    host.env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    code, checks = doctor.checks()
    assert checks["autoload"]["status"] == "warn"
    assert checks["import"]["status"] == "ok"
    assert "import torch loaded torch_npu: no" in checks["import"]["evidence"]


def test_torch_npu_without_the_entry_point(host, fpy, doctor):
    host.ready()
    fpy.torch()
    fpy.torch_npu(entry_point=False)
    code, checks = doctor.checks("--no-import")
    assert checks["autoload"]["status"] == "warn"
    assert "import torch_npu" in checks["autoload"]["fix"]


def test_an_import_that_hangs_is_stopped(host, fpy, doctor):
    host.ready()
    fpy.torch()
    fpy.torch_npu(behaviour="import time\ntime.sleep(60)")
    code, checks = doctor.checks("--timeout", "2")
    imp = checks["import"]
    assert code == 1 and imp["status"] == "fail"
    assert imp["summary"] == "the import hung for 2 s and was stopped"


def test_an_import_that_crashes_is_explained(host, fpy, doctor):
    host.ready()
    fpy.torch()
    fpy.torch_npu(behaviour="sys.stderr.write('EH9999: Inner Error!\\n'); sys.stderr.flush()\nos.abort()")
    code, checks = doctor.checks()
    imp = checks["import"]
    assert imp["status"] == "fail" and imp["summary"] == "importing torch / torch_npu crashed"
    assert any(e.startswith("EH9999 Inner_Error:") for e in imp["evidence"])


def test_cann_logs_of_the_import_are_explained_and_left_nowhere(host, fpy, doctor):
    host.ready()
    fpy.torch()
    fpy.torch_npu(
        behaviour=(
            "_d = os.path.join(os.environ['ASCEND_PROCESS_LOG_PATH'], 'debug', 'plog')\n"
            "os.makedirs(_d, exist_ok=True)\n"
            "open(os.path.join(_d, 'plog-1_1.log'), 'w').write('[ERROR] Resource_Busy(EL0005): x')"
            "\nraise RuntimeError('rtSetDevice failed')"
        )
    )
    code, checks = doctor.checks()
    assert any(e.startswith("EL0005 Resource_Busy:") for e in checks["import"]["evidence"])
    assert not (host.base / "home/ascend").exists()
