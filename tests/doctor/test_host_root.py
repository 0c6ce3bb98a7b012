"""One host under test: with ``--root``, every path the doctor checks is read under the root
(table paths, $HOME, and the paths environment variables name), symlinks resolve inside the
root, and evidence and fixes name paths as the host does, never this machine's copy."""

from __future__ import annotations

import json
import os
from pathlib import Path

from migrate.doctor.install import Layout


def _text(checks: dict[str, dict]) -> str:
    return json.dumps(checks)


def test_environment_paths_are_the_hosts(host, fpy, doctor):
    home = host.ready()
    fpy.torch()
    fpy.torch_npu()
    fpy.cann_deps()
    assert host.env["ASCEND_HOME_PATH"] == "/usr/local/Ascend/cann"  # the host's own value
    code, checks = doctor.checks("--no-import")
    assert code == 0, {k: v["summary"] for k, v in checks.items() if v["status"] == "fail"}
    assert checks["set-env"]["status"] == "ok"
    assert "found through: ASCEND_HOME_PATH" in checks["cann-toolkit"]["evidence"]
    assert checks["cann-toolkit"]["summary"] == "CANN 9.1.0 at /usr/local/Ascend/cann"
    libs = " ".join(checks["libraries"]["evidence"])
    assert "libascendcl.so: /usr/local/Ascend/cann/lib64/libascendcl.so (via LD_LIBRARY_PATH)" in libs
    assert str(host.root) not in _text(checks)  # nothing names this machine's copy
    assert home.is_dir()


def test_a_folder_of_this_machine_is_not_the_hosts(host, fpy, doctor):
    """ASCEND_OPP_PATH names a folder that exists here but not on the host under test."""
    host.ready()
    fpy.torch()
    fpy.torch_npu()
    here = Path(__file__).resolve().parent
    assert here.is_dir() and not (host.root / str(here).lstrip("/")).exists()
    host.env["ASCEND_OPP_PATH"] = str(here)
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["status"] == "fail"
    assert f"ASCEND_OPP_PATH={here} does not exist" in checks["set-env"]["evidence"]
    assert checks["set-env"]["fix"] == "source /usr/local/Ascend/cann/set_env.sh"


def test_library_path_entries_are_read_under_the_root(host, fpy, doctor, tmp_path):
    """A library on this machine at the path LD_LIBRARY_PATH names does not count."""
    home = host.ready()
    fpy.torch()
    fpy.torch_npu()
    outside = tmp_path / "outside"
    (outside / "libhccl.so").parent.mkdir()
    (outside / "libhccl.so").write_bytes(b"\x7fELF" + b"\0" * 60)
    (home / "lib64/libhccl.so").unlink()
    host.env["LD_LIBRARY_PATH"] = f"{outside}:{host.env['LD_LIBRARY_PATH']}"
    code, checks = doctor.checks("--no-import")
    libs = checks["libraries"]
    assert libs["status"] == "fail" and "libhccl.so" in libs["summary"]
    assert libs["fix"].splitlines()[0] == "source /usr/local/Ascend/cann/set_env.sh"


def test_absolute_symlinks_resolve_inside_the_root(host, fpy, doctor):
    """ascend-toolkit/latest -> /usr/local/Ascend/ascend-toolkit/8.0.0, an absolute link as the
    installer makes it: followed on the host, not on this machine."""
    real = host.cann("8.0.0", home="ascend-toolkit/8.0.0")
    (host.ascend / "ascend-toolkit/latest").symlink_to("/usr/local/Ascend/ascend-toolkit/8.0.0")
    fpy.torch("2.4.0+cpu")
    fpy.torch_npu("2.4.0.post2", "==2.4.0")
    host.env["ASCEND_HOME_PATH"] = "/usr/local/Ascend/ascend-toolkit/latest"
    host.env["ASCEND_OPP_PATH"] = "/usr/local/Ascend/ascend-toolkit/latest/opp"
    code, checks = doctor.checks("--no-import")
    assert checks["set-env"]["status"] == "ok", checks["set-env"]
    assert "found through: ASCEND_HOME_PATH" in checks["cann-toolkit"]["evidence"]
    assert checks["cann-toolkit"]["summary"] == f"CANN 8.0.0 at {host.named(real)}"
    assert str(host.root) not in _text(checks)


def test_home_is_the_hosts(host, fpy, doctor):
    """~/Ascend is the host's $HOME (read under the root), not the home of this machine."""
    user = host.root / "home/user"
    host.cann("9.1.0", home="cann")
    (user / "Ascend").mkdir()
    os.rename(host.ascend / "cann", user / "Ascend/cann")
    fpy.torch()
    fpy.torch_npu()
    code, checks = doctor.checks("--no-import")
    assert checks["cann-toolkit"]["status"] == "ok"
    assert checks["cann-toolkit"]["summary"] == "CANN 9.1.0 at /home/user/Ascend/cann"
    assert checks["set-env"]["fix"] == "source /home/user/Ascend/cann/set_env.sh"


def test_layout_resolution(tmp_path):
    root = tmp_path / "r"
    (root / "a/b").mkdir(parents=True)
    (root / "link").symlink_to("/a/b")  # absolute: the host's /a/b
    (root / "a/up").symlink_to("../../../..")  # .. stops at the root
    (root / "loop").symlink_to("/loop")
    lay = Layout(root, Path("/home/u"), {})
    assert lay.host("/link/c") == root / "a/b/c"
    assert lay.host("/a/up/a/b") == root / "a/b"
    assert lay.host("/loop") == root / "loop"  # a loop stops, never hangs
    assert lay.host("relative/x") == Path("relative/x")
    assert lay.shown(root / "a/b") == "/a/b" and lay.shown(root) == "/"
    assert lay.shown("/elsewhere") == "/elsewhere"
    assert lay.system("~/Ascend") == root / "home/u/Ascend"
    identity = Layout(Path("/"), Path("/home/u"), {})
    assert identity.host("/usr/lib") == Path("/usr/lib") and identity.shown("/usr") == "/usr"


def test_the_import_probe_loads_the_hosts_libraries(host, fpy, doctor):
    """The probe runs with the host's environment, its library path read under the root: the
    stand-in torch_npu finds libhccl.so at the host's /usr/local/Ascend/cann/lib64."""
    home = host.ready()
    fpy.torch()
    fpy.torch_npu()
    fpy.cann_deps()
    assert "/usr/local/Ascend/cann/lib64" in host.env["LD_LIBRARY_PATH"].split(":")
    code, checks = doctor.checks()
    assert checks["import"]["status"] == "ok", checks["import"]
    (home / "lib64/libhccl.so").unlink()  # gone from the host: the import fails as it would there
    code, checks = doctor.checks()
    assert checks["import"]["status"] == "fail"
    assert any("libhccl" in e for e in checks["import"]["evidence"])
