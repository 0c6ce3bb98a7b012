"""Fixtures: a fake Ascend host, a fake Python environment, and the real `migrate doctor`
command run on them (in process, with exactly the host's environment)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fakehost import STAND_INS, FakeHost, FakePython, make_python
from typer.testing import CliRunner

from migrate.cli import app


@pytest.fixture(autouse=True)
def _stand_in_nodes(monkeypatch):
    """Where device nodes cannot be made (no CAP_MKNOD), the regular files the fake host
    made instead count as devices, and nothing else does."""
    from migrate.doctor.checks import devices

    real = devices.is_device_node
    monkeypatch.setattr(devices, "is_device_node", lambda p: str(p) in STAND_INS or real(p))


@pytest.fixture
def host(tmp_path) -> FakeHost:
    (tmp_path / "root/home/user").mkdir(parents=True)
    env = {"HOME": "/home/user", "PATH": os.environ.get("PATH", "")}
    return FakeHost(tmp_path, env=env)


@pytest.fixture(scope="session")
def venv_template(tmp_path_factory) -> FakePython:
    return make_python(tmp_path_factory.mktemp("template") / "venv")


@pytest.fixture
def fpy(tmp_path, venv_template) -> FakePython:
    """A fresh virtualenv (a copy of one made per session: copying is faster)."""
    shutil.copytree(venv_template.venv, tmp_path / "venv", symlinks=True)
    return FakePython(tmp_path / "venv")


class Doctor:
    def __init__(self, host: FakeHost, fpy: FakePython | None):
        self.host, self.fpy = host, fpy

    def run(self, *args: str, env: dict[str, str] | None = None):
        """`migrate doctor` on the fake host: (exit code, parsed JSON or text, result)."""
        argv = ["doctor", "--root", str(self.host.root), *args]
        if self.fpy is not None and "--python" not in args:
            argv += ["--python", self.fpy.python]
        environ = {k: None for k in os.environ}
        environ.update(self.host.env if env is None else env)
        result = CliRunner().invoke(app, argv, env=environ, catch_exceptions=False)
        out = result.stdout
        if "--format" in args and args[args.index("--format") + 1] == "json":
            out = json.loads(out)
        return result.exit_code, out, result

    def checks(self, *args: str, env=None) -> tuple[int, dict[str, dict]]:
        code, data, _ = self.run("--format", "json", *args, env=env)
        return code, {c["id"]: c for c in data["checks"]}


@pytest.fixture
def doctor(host, fpy) -> Doctor:
    return Doctor(host, fpy)


@pytest.fixture(scope="session")
def repo() -> Path:
    return Path(__file__).resolve().parents[2]
