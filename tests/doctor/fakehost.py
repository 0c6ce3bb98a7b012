"""Fake Ascend hosts for the doctor tests: install trees, environments, device nodes,
processes and Python environments, laid out in a temporary folder.

The file formats are the real ones, as published:
* ``<cann home>/<arch>-linux/ascend_toolkit_install.info``: ``package_name=``, ``version=``,
  ``innerversion=``, ``arch=``, ``path=`` (MindCluster FaultDiag log-collection guide; the
  records pasted in vllm-ascend issue 13647);
* ``<cann home>/opp_kernel/version.info``: ``Version=`` (build), ``version_dir=`` (release),
  ``required_package_toolkit_version=">=7.6, <=8.3"`` (an 8.3.RC1 kernels record);
* ``/usr/local/Ascend/driver/version.info``: ``Version=``, ``Innerversion=``,
  ``compatible_version_fw=[7.0.0,7.2.99]``; ``/usr/local/Ascend/firmware/version.info``:
  ``Version=7.1.0.11.220``, ``compatible_version_drv=...``;
* ``/etc/ascend_install.info``: ``Driver_Install_Path_Param=/usr/local/Ascend``.

Shared libraries are stand-in files holding an ELF header (the doctor resolves them and reads
the header, it never loads them); device nodes are character devices (``os.mknod``).
Python environments are real virtualenvs (``--without-pip``) whose site-packages hold
distribution metadata and small stand-in ``torch`` / ``torch_npu`` packages that behave as
the real ones do at import: torch autoloads ``torch.backends`` entry points (and turns a
failure into "Failed to load the backend extension"), torch_npu refuses a CUDA torch ("Two
accelerators cannot be used at the same time"), and fails with the loader's message when
libhccl.so / libascendcl.so are not on LD_LIBRARY_PATH.
"""

from __future__ import annotations

import os
import stat
import struct
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ARCH = "x86_64"
STAND_INS: set[str] = set()  # regular files standing in for device nodes (no CAP_MKNOD here)
E_MACHINE = {"x86_64": 62, "aarch64": 183}


def elf_header(machine: str) -> bytes:
    """The 64-byte header of a little-endian 64-bit ELF shared object (ET_DYN)."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    return ident + struct.pack("<HHI", 3, E_MACHINE[machine], 1) + bytes(64 - 16 - 8)


FAKE_TORCH_INIT = """\
import os
from importlib.metadata import entry_points

from torch import version
from torch.version import __version__


def _import_device_backends():
    for backend_extension in entry_points(group="torch.backends"):
        try:
            entrypoint = backend_extension.load()
            entrypoint()
        except Exception as err:
            raise RuntimeError(
                f"Failed to load the backend extension: {backend_extension.name}. "
                f"You can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0."
            ) from err


if os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1":
    _import_device_backends()
"""

FAKE_TORCH_NPU_INIT = """\
import os
import re
import sys

import torch

__version__ = {version!r}
if torch.version.cuda:
    raise RuntimeError("Two accelerators cannot be used at the same time in PyTorch: npu and "
                       "cuda. You can install the cpu version of PyTorch to use your npu device")
{behaviour}

def _loadable(name):
    return any(d and os.path.isfile(os.path.join(d, name))
               for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"))


for _lib in ("libhccl.so", "libascendcl.so"):
    if not _loadable(_lib):
        raise ImportError(f"{{_lib}}: cannot open shared object file: No such file or directory"
                          ". Please check that the cann package is installed.")


class _Npu:
    @staticmethod
    def device_count():
        dev = os.environ.get("MIGRATE_TEST_DEV", "/dev")
        try:
            names = os.listdir(dev)
        except OSError:
            return 0
        return sum(bool(re.fullmatch(r"davinci\\d+", n)) for n in names)

    @classmethod
    def is_available(cls):
        return cls.device_count() > 0


torch.npu = _Npu()


def _autoload():
    pass
"""


@dataclass
class FakeHost:
    base: Path
    arch: str = ARCH
    env: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def ascend(self) -> Path:
        return self.root / "usr/local/Ascend"

    def named(self, path: Path) -> str:
        """A path under the root as the host under test names it (``/usr/local/...``)."""
        return "/" + str(Path(path).relative_to(self.root))

    def write(self, rel: str | Path, text: str = "", mode: int = 0o644) -> Path:
        path = self.root / rel if not Path(rel).is_absolute() else Path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        path.chmod(mode)
        return path

    # -- CANN ------------------------------------------------------------------------------
    def cann(
        self, version: str = "9.1.0", home: str = "cann", *, libs: bool = True, dirs: bool = True
    ) -> Path:
        """A toolkit install record (and the folders torch_npu checks) under the CANN home."""
        home_dir = self.ascend / home
        self.write(
            home_dir / f"{self.arch}-linux/ascend_toolkit_install.info",
            f"""\
            package_name=Ascend-cann-toolkit
            version={version}
            innerversion=V100R001C25SPC001B212
            compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20]
            arch={self.arch}
            os=linux
            path=/usr/local/Ascend/{home}/{self.arch}-linux
            """,
        )
        script = (
            home_dir / "set_env.sh"
            if home == "cann"
            else home_dir.parent.parent / "ascend-toolkit/set_env.sh"
        )
        self.write(script, f"export ASCEND_HOME_PATH={self.named(home_dir)}\n")
        if dirs:
            for sub in ("runtime", "compiler", "opp"):
                (home_dir / sub).mkdir(parents=True, exist_ok=True)
        if libs:
            for lib in ("libascendcl.so", "libhccl.so"):
                self.library(home_dir / "lib64" / lib)
        return home_dir

    def kernels(self, home: Path, release: str, toolkits: str | None = None) -> None:
        extra = f'required_package_toolkit_version="{toolkits}"\n' if toolkits else ""
        self.write(
            home / "opp_kernel/version.info",
            f"Version=8.3.T5.0.B028\nversion_dir={release}\ntimestamp=20250807_092944934\n{extra}",
        )

    def source(self, home: Path) -> None:
        """What `source set_env.sh` leaves in the environment (the host's paths)."""
        self.env["ASCEND_HOME_PATH"] = self.named(home)
        self.env["ASCEND_TOOLKIT_HOME"] = self.named(home)
        self.env["ASCEND_OPP_PATH"] = self.named(home / "opp")
        self._library_path(home / "lib64")

    def _library_path(self, folder: Path) -> None:
        old = self.env.get("LD_LIBRARY_PATH")
        named = self.named(folder)
        self.env["LD_LIBRARY_PATH"] = f"{named}:{old}" if old else named

    # -- driver, firmware, devices ---------------------------------------------------------
    def driver(self, version: str = "25.5.0", fw_range: str = "[7.0.0,7.9.99]", on_path: bool = True) -> None:
        self.write(
            "etc/ascend_install.info",
            "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_Mode=normal\n",
        )
        self.write(
            self.ascend / "driver/version.info",
            f"""\
            Version={version}
            ascendhal_version=7.35.23
            Innerversion=V100R001C23SPC005B219
            compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]
            compatible_version_fw={fw_range}
            """,
        )
        self.library(self.ascend / "driver/lib64/driver/libascend_hal.so")
        (self.ascend / "driver/lib64/common").mkdir(parents=True, exist_ok=True)
        if on_path:
            self._library_path(self.ascend / "driver/lib64/driver")

    def firmware(self, version: str = "7.8.0.5.216") -> None:
        self.write(
            self.ascend / "firmware/version.info",
            f"Version={version}\nfirmware_version=1.0\npackage_version=25.5.0\n",
        )

    def devices(self, count: int = 8, shared: bool = True) -> None:
        """Character device nodes, as the driver makes them (major 236 is a free dynamic
        major; they are never opened). Where this user may not make device nodes, regular
        files stand in and are listed in STAND_INS (conftest accepts exactly those)."""
        names = [f"davinci{i}" for i in range(count)]
        if shared:
            names += ["davinci_manager", "devmm_svm", "hisi_hdc"]
        for minor, name in enumerate(names):
            self.node(f"dev/{name}", minor)
        self.env["MIGRATE_TEST_DEV"] = str(self.root / "dev")

    def node(self, rel: str, minor: int = 0) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(236, minor))
        except PermissionError:
            self.write(rel, mode=0o666)
            STAND_INS.add(str(path))
        return path

    def library(self, path: Path, machine: str | None = None) -> Path:
        """A stand-in shared library: an ELF header for this host's architecture (the
        doctor reads the header, never loads it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(elf_header(machine or self.arch))
        return path

    def process(self, pid: int, cmdline: str, devices: list[int]) -> None:
        folder = self.root / f"proc/{pid}"
        (folder / "fd").mkdir(parents=True, exist_ok=True)
        (folder / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode() + b"\0")
        for n, dev in enumerate(devices, start=3):
            os.symlink(f"/dev/davinci{dev}", folder / "fd" / str(n))
        (folder / "fd" / "0").symlink_to("/dev/null")

    def npu_smi(self, table: str = "", code: int = 0, stderr: str = "", sleep: float = 0) -> Path:
        """A stand-in ``npu-smi`` in the host's /usr/local/sbin (on its PATH) that prints
        ``table`` for ``npu-smi info`` (real output, tests/doctor/data/npu_smi_*.txt)."""
        data = self.base / f"npu-smi-{len(list(self.base.glob('npu-smi-*')))}.txt"
        data.write_text(table)
        script = "#!/bin/sh\n" + (f"sleep {sleep}\n" if sleep else "")
        script += f'[ "$1" = info ] || exit 2\ncat {data}\n'
        if stderr:
            script += f"echo {stderr!r} >&2\n"
        path = self.write("usr/local/sbin/npu-smi", script + f"exit {code}\n", mode=0o755)
        if "/usr/local/sbin" not in self.env.get("PATH", "").split(":"):
            self.env["PATH"] = "/usr/local/sbin:" + self.env.get("PATH", "")
        return path

    def nnal(self, on_path: bool = False) -> None:
        self.write(self.ascend / "nnal/atb/set_env.sh", "export ATB_HOME_PATH=x\n")
        self.library(self.ascend / "nnal/atb/latest/atb/cxx_abi_1/lib/libatb.so")
        if on_path:
            self._library_path(self.ascend / "nnal/atb/latest/atb/cxx_abi_1/lib")

    def ready(self, cann: str = "9.1.0") -> Path:
        """A host a torch_npu 2.14.0 port runs on: CANN, driver, firmware, devices, sourced."""
        home = self.cann(cann)
        self.source(home)
        self.driver()
        self.firmware()
        self.devices()
        return home


@dataclass
class FakePython:
    """A virtualenv whose site-packages holds the distributions a test lays out."""

    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def site(self) -> Path:
        return next((self.venv / "lib").glob("python3*/site-packages"))

    def dist(
        self,
        name: str,
        version: str,
        requires: list[str] = (),
        entry_points: str = "",
        files: dict[str, str] | None = None,
    ) -> None:
        info = self.site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        meta += [f"Requires-Dist: {r}" for r in requires]
        (info / "METADATA").write_text("\n".join(meta) + "\n")
        (info / "INSTALLER").write_text("pip\n")
        if entry_points:
            (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        for rel, text in (files or {}).items():
            path = self.site / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def torch(self, version: str = "2.14.0+cpu", cuda: str | None = None, requires: list[str] = ()) -> None:
        version_py = (
            f"__version__ = {version!r}\ndebug = False\ncuda = {cuda!r}\n"
            "git_version = 'x'\nhip = None\nrocm = None\nxpu = None\n"
        )
        self.dist(
            "torch",
            version,
            list(requires),
            files={"torch/__init__.py": FAKE_TORCH_INIT, "torch/version.py": version_py},
        )

    def cann_deps(self, skip: tuple[str, ...] = ()) -> None:
        """The Python packages CANN's operator compiler imports (metadata only)."""
        from migrate.doctor.tables import environment_table

        for name in environment_table().cann_python_deps.extra["packages"]:
            if name not in skip:
                self.dist(name, "1.0")

    def torch_npu(
        self,
        version: str = "2.14.0",
        torch_pin: str = "==2.14.0.*",
        behaviour: str = "",
        entry_point: bool = True,
    ) -> None:
        eps = "[torch.backends]\ntorch_npu = torch_npu:_autoload\n" if entry_point else ""
        self.dist(
            "torch-npu",
            version,
            [f"torch{torch_pin}", "numpy", "pyyaml"],
            eps,
            files={"torch_npu/__init__.py": FAKE_TORCH_NPU_INIT.format(version=version, behaviour=behaviour)},
        )


def make_python(folder: Path) -> FakePython:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True
    )
    return FakePython(folder)


def ready_host(
    host: FakeHost, fpy: FakePython, cann="9.1.0", torch="2.14.0+cpu", npu="2.14.0", pin="==2.14.0.*"
):
    """Make ``host`` and ``fpy`` a ready host (the CANN home) before a test breaks one part."""
    home = host.ready(cann)
    fpy.torch(torch)
    fpy.torch_npu(npu, pin)
    fpy.cann_deps()
    return home
