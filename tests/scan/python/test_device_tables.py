"""A table keyed by device type gains the NPU's entry (scan/python/device_tables.py)."""

from __future__ import annotations

import types

import pytest
from porting import port

# kornia/feature/lightglue.py before a port, shortened: the threshold is looked up by the
# device's type, which a port makes "npu"
LIGHTGLUE = """\
    from typing import Any, ClassVar, Dict

    import torch


    class LightGlue(torch.nn.Module):
        pruning_keypoint_thresholds: ClassVar[Dict[str, Any]] = {
            "cpu": -1,
            "mps": -1,
            "cuda": 1024,
            "flash": 1536,
        }

        def pruning_min_kpts(self, device: torch.device) -> int:
            return self.pruning_keypoint_thresholds[device.type]
    """


def _lookup(code: str, name: str, device: str):
    namespace: dict = {}
    exec(compile(code, "t.py", "exec"), namespace)
    # a device of that type, as the NPU's torch.device (this host's torch knows no "npu")
    return namespace[name]().pruning_min_kpts(types.SimpleNamespace(type=device))


@pytest.mark.parametrize("target", ["portable", "npu", "transfer"])
def test_the_npu_entry_follows_cudas_laid_out_as_the_others(target):
    out = port(LIGHTGLUE, target)
    assert '        "cuda": 1024,\n        "npu": 1024,\n        "flash": 1536,\n' in out
    assert port(out, target) == out  # the table now has "npu": a second run leaves it
    assert _lookup(out, "LightGlue", "npu") == 1024  # KeyError before the port
    assert _lookup(out, "LightGlue", "cuda") == 1024 and _lookup(out, "LightGlue", "cpu") == -1


def test_a_one_line_table_gets_the_entry_right_after_cudas():
    out = port("""\
        LIMITS = {"cpu": 1, "cuda": 2}
        MODES = {'cuda': 'fast', 'xpu': 'slow', 'cpu': 'slow'}
        """)
    assert 'LIMITS = {"cpu": 1, "cuda": 2, "npu": 2}\n' in out
    assert "MODES = {'cuda': 'fast', 'npu': 'fast', 'xpu': 'slow', 'cpu': 'slow'}\n" in out
    namespace: dict = {}
    exec(compile(out, "t.py", "exec"), namespace)
    assert namespace["LIMITS"]["npu"] == 2 and namespace["MODES"]["npu"] == "fast"


def test_the_last_entry_without_a_comma_gets_one():
    out = port("""\
        LIMITS = {
            "cpu": -1,
            "cuda": 4 * 256
        }
        """)
    assert '    "cuda": 4 * 256,\n    "npu": 4 * 256\n}\n' in out


def test_a_backend_table_gains_hccl_for_the_npu():
    """timm #2109's engineers added `"npu": "hccl"` to its table of collective backends."""
    out = port("""\
        dist_backends = {
            "xpu": "ccl",
            "hpu": "hccl",
            "cuda": "nccl",
        }
        """)
    assert '    "cuda": "nccl",\n    "npu": "hccl",\n}\n' in out
    assert port(out) == out


@pytest.mark.parametrize(
    "code",
    [
        'LIMITS = {"cuda": 1, "flash": 2}\n',  # no other device type: not a device table
        'LIMITS = {"cpu": 1, "cuda": 2, "npu": 3}\n',  # the NPU's entry is there
        'BACKENDS = {"cpu": "gloo", "cuda": "nccl_ext"}\n',  # CUDA's own, not NCCL's name
        'SYNC = {"cpu": None, "cuda": torch.cuda.synchronize}\n',
        'MAKE = {"cpu": None, "cuda": make_stream()}\n',  # a call: not copied
        'LIMITS = {"cpu": 1, "cuda": 2, **more}\n',  # keys not all written
        'LIMITS = {"cpu": 1, "cuda": (\n    2\n)}\n',  # CUDA's value over lines
    ],
)
def test_tables_a_person_judges_are_left_as_written(code):
    text = "import torch\n\n" + code
    assert port(text) == text


def test_transfer_to_npu_patches_no_lookup_so_an_entry_point_gets_the_entry_too():
    out = port(
        """\
        import torch

        LIMITS = {"cpu": -1, "cuda": 1024}

        if __name__ == "__main__":
            print(LIMITS[torch.zeros(1).cuda().device.type])
        """,
        "transfer",
    )
    assert "from torch_npu.contrib import transfer_to_npu" in out  # an entry point
    assert 'LIMITS = {"cpu": -1, "cuda": 1024, "npu": 1024}\n' in out
    assert ".cuda()" in out  # what the patch reaches stays as written
