"""An `import torch` the port left unused goes (accelerate 1.6: launchers.py and
test_utils/scripts/test_cli.py failed their own ruff F401 after the port); any other goes on."""

from __future__ import annotations

import textwrap

from migrate.fix.prune import drop_unused_torch

from .goldens import migrate_cli

TEST_CLI = """\
    # limitations under the License.
    import torch


    def main():
        num_gpus = torch.cuda.device_count()
        print(f"Successfully ran on {num_gpus} GPUs")


    if __name__ == "__main__":
        main()
    """


def test_a_package_file_whose_torch_uses_all_went_through_the_helpers(tmp_path):
    pkg = tmp_path / "acc"
    (pkg / "scripts").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "scripts" / "__init__.py").write_text("")
    (pkg / "scripts" / "test_cli.py").write_text(textwrap.dedent(TEST_CLI))
    launchers = "import os\nimport torch\n\nfrom .state import State\n\n\n"
    launchers += "def n():\n    return torch.cuda.device_count()\n"
    (pkg / "launchers.py").write_text(launchers)
    (pkg / "state.py").write_text("class State:\n    pass\n")
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    cli = (pkg / "scripts" / "test_cli.py").read_text()
    assert "import torch" not in cli and "from acc._device import get_device_module\n" in cli
    assert (
        (pkg / "launchers.py")
        .read_text()
        .startswith("import os\n\nfrom ._device import get_device_module\nfrom .state import State\n")
    )
    again = migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0 and "0 files would change" in again.output


def test_an_import_still_named_or_not_made_unused_by_the_port_stays():
    before = "import torch\n\n\ndef f():\n    return torch.cuda.device_count()\n"
    after = "import torch\n\nfrom .d import m\n\n\ndef f():\n    return m().device_count()\n"
    assert (
        drop_unused_torch(before, after) == "from .d import m\n\n\ndef f():\n    return m().device_count()\n"
    )  # the file's first line went: the gap after it too (no leading blank line)
    annotated = after + '\n\ndef g(x: "torch.Tensor"):\n    return x\n'
    assert drop_unused_torch(before, annotated) == annotated  # a string annotation names it
    exported = after + '\n__all__ = ["torch"]\n'
    assert drop_unused_torch(before, exported) == exported
    noqa = after.replace("import torch\n", "import torch  # noqa: F401\n")
    assert drop_unused_torch(before, noqa) == noqa  # the author's own line
    unused_before = "import torch\n\n\ndef f():\n    return 1\n"
    assert drop_unused_torch(unused_before, unused_before) == unused_before
    npu = "import torch\nimport torch_npu\n\nopt = torch_npu.optim.NpuFusedAdamW(params)\n"
    assert drop_unused_torch("import torch\n\nopt = torch.optim.AdamW(params)\n", npu) == npu
    aliased = "import torch as th\n\n\ndef f():\n    return 1\n"
    assert drop_unused_torch("import torch as th\nth.cuda.x()\n", aliased) == aliased
