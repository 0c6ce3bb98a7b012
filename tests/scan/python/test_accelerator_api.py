"""An accelerator API the project already has (DeepSpeed's get_accelerator(), or a package's
own object of that shape) is the port's helper: devices are spelled through it and no
second abstraction (<package>/_device.py) is added (rules/accelerator_apis.yaml)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fix.goldens import migrate_cli
from trees import write

from migrate.core.errors import RuleError
from migrate.scan.accelerator_apis import accelerator_apis

TRAIN = """\
    import torch
    from deepspeed.accelerator import get_accelerator


    def step(model, x):
        x = x.to("cuda")
        y = model(x)
        torch.cuda.synchronize()
        return y, torch.cuda.device_count()
    """
OTHER = """\
    import torch


    def setup(x):
        torch.distributed.init_process_group("nccl")
        x = x.cuda()
        return x, torch.cuda.get_device_capability()
    """
# a stand-in for deepspeed's CPU accelerator, so the ported code runs here
FAKE_DS = """\
    class _Cpu:
        def device_name(self, index=None):
            return "cpu"

        def synchronize(self):
            return None

        def device_count(self):
            return 0

        def communication_backend_name(self):
            return "gloo"


    def get_accelerator():
        return _Cpu()
    """


def test_the_getter_in_scope_and_in_the_package_is_the_helper(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAIN, "pkg/other.py": OTHER})
    r = migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    train = (tmp_path / "pkg/train.py").read_text()
    assert "x = x.to(get_accelerator().device_name())" in train
    assert "    get_accelerator().synchronize()\n" in train
    assert "get_accelerator().device_count()" in train
    other = (tmp_path / "pkg/other.py").read_text()
    assert "from deepspeed.accelerator import get_accelerator\n" in other  # the package's, imported
    assert "get_accelerator().communication_backend_name()" in other
    assert "x = x.to(get_accelerator().device_name())" in other
    # no method for it: left for a person, never a second helper
    assert "torch.cuda.get_device_capability()" in other
    assert not (tmp_path / "pkg/_device.py").exists()
    assert "_device import" not in train + other
    before = {p: p.read_text() for p in tmp_path.rglob("*.py")}
    assert migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"]).exit_code == 0
    assert {p: p.read_text() for p in tmp_path.rglob("*.py")} == before  # a second run: no change


DRIVE = "import torch; from pkg.train import step; print(step(lambda x: x * 2, torch.ones(2)))"


def test_the_ported_code_runs_through_the_accelerator(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAIN})
    assert migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"]).exit_code == 0
    write(tmp_path / "fake", {"deepspeed/__init__.py": "", "deepspeed/accelerator/__init__.py": FAKE_DS})
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch; from pkg.train import step; print(step(lambda x: x * 2, torch.ones(2)))",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{tmp_path / 'fake'}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "(tensor([2., 2.]), 0)" in run.stdout


OWN = {
    "proj/__init__.py": "",
    "proj/accelerator/__init__.py": "from .real import get_accelerator\n",
    "proj/accelerator/real.py": """\
        import torch


        class CudaAccelerator:
            def device_name(self, index=None):
                return "cuda" if index is None else f"cuda:{index}"

            def synchronize(self):
                return torch.cuda.synchronize()


        def get_accelerator():
            return CudaAccelerator()
        """,
    "proj/train.py": """\
        import torch


        def step(x):
            torch.cuda.synchronize()
            return x.to("cuda")
        """,
}


def test_a_packages_own_accelerator_object_is_its_helper_and_its_own_code_stays(tmp_path):
    write(tmp_path, OWN)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"]).exit_code == 0
    train = (tmp_path / "proj/train.py").read_text()
    assert "from .accelerator import get_accelerator\n" in train
    assert "get_accelerator().synchronize()" in train and "x.to(get_accelerator().device_name())" in train
    # the object's CUDA backend is not routed through itself (it would call itself)
    assert "return torch.cuda.synchronize()" in (tmp_path / "proj/accelerator/real.py").read_text()
    assert not (tmp_path / "proj/_device.py").exists()


@pytest.mark.parametrize(
    "spelled", ["from .accelerator import get_accelerator", "from .accelerator import get_accelerator as acc"]
)
def test_a_getter_the_file_imports_relatively_is_called_as_imported_and_not_imported_again(tmp_path, spelled):
    own = dict(OWN)
    own["proj/train.py"] = own["proj/train.py"].replace(
        "import torch\n", f"import torch\n\n        {spelled}\n", 1
    )
    write(tmp_path, own)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    train = (tmp_path / "proj/train.py").read_text()
    local = spelled.split()[-1]
    assert train.count("import get_accelerator") == 1, train
    assert f"{local}().synchronize()" in train and f"x.to({local}().device_name())" in train


def test_a_getter_of_that_name_without_the_objects_methods_is_not_taken(tmp_path):
    own = dict(OWN)
    own["proj/accelerator/real.py"] = "def get_accelerator():\n    return object()\n"
    write(tmp_path, own)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"]).exit_code == 0
    assert "get_accelerator()" not in (tmp_path / "proj/train.py").read_text()


def test_the_table_is_checked_when_it_loads(tmp_path):
    api = accelerator_apis()[0]
    assert api.methods["synchronize"] == "synchronize" and api.type == "device_name()"
    bad = tmp_path / "t.yaml"
    bad.write_text(
        "accelerator_apis:\n  x:\n    modules: [a.b]\n    getter: g\n    type: device_name()\n"
        "    methods: {synchronize: sync}\n    mehtods: {}\n"
    )
    with pytest.raises(RuleError, match="unknown key 'mehtods'"):
        accelerator_apis(str(bad))
    bad.write_text("accelerator_apis:\n  x:\n    modules: [a.b]\n    getter: g\n    methods: {}\n")
    with pytest.raises(RuleError, match="needs key 'type'"):
        accelerator_apis(str(bad))


# transformers imports deepspeed's getter only inside its DeepSpeed integration: an optional
# dependency, which no other file of the package (nor this one's other functions) may need
OPTIONAL = """\
    import torch


    def with_deepspeed():
        from deepspeed.accelerator import get_accelerator

        return get_accelerator().device_name()


    def sync():
        torch.cuda.synchronize()
    """


def test_a_getter_imported_only_inside_a_function_is_not_the_helper(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/integration.py": OPTIONAL, "pkg/other.py": OTHER})
    r = migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    integration = (tmp_path / "pkg/integration.py").read_text()
    other = (tmp_path / "pkg/other.py").read_text()
    assert "    get_accelerator().synchronize()" not in integration  # unbound there: NameError
    assert "deepspeed" not in other  # no new hard dependency
    assert "get_device_module().synchronize()" in integration  # the package's port helper
    compile(integration, "integration.py", "exec")


HF_ACCELERATE = {
    "proj/__init__.py": "",
    # huggingface accelerate's Accelerator: a training wrapper, not a device; a class of the
    # package has a device_name method of its own (a log tag), which is not that object
    "proj/utils.py": """\
        from accelerate import Accelerator


        class RunInfo:
            def device_name(self):
                return "gpu0"


        def get_accelerator():
            return Accelerator(mixed_precision="bf16")
        """,
    "proj/train.py": """\
        import torch

        from .utils import get_accelerator


        def step(x):
            acc = get_accelerator()
            torch.cuda.synchronize()
            return acc, x.to("cuda")
        """,
}


def test_a_get_accelerator_returning_another_object_is_not_the_device_helper(tmp_path):
    write(tmp_path, HF_ACCELERATE)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    train = (tmp_path / "proj/train.py").read_text()
    assert "get_accelerator()." not in train and "acc = get_accelerator()\n" in train
    assert "get_device_module().synchronize()" in train and "x.to(get_device_type())" in train
    # the package's own object, returned through a module-level name (DeepSpeed's
    # real_accelerator.py caches it in ds_accelerator), is still its helper
    own = dict(OWN)
    own["proj/accelerator/real.py"] = OWN["proj/accelerator/real.py"].replace(
        "        def get_accelerator():\n            return CudaAccelerator()\n",
        "        ds_accelerator = None\n\n\n"
        "        def get_accelerator():\n"
        "            global ds_accelerator\n"
        "            if ds_accelerator is None:\n"
        "                ds_accelerator = CudaAccelerator()\n"
        "            return ds_accelerator\n",
    )
    assert own != OWN
    write(tmp_path / "ds", own)
    assert migrate_cli(["apply", str(tmp_path / "ds"), "--no-cache", "--no-progress"]).exit_code == 0
    assert "get_accelerator().synchronize()" in (tmp_path / "ds/proj/train.py").read_text()
