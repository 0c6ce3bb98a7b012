"""A project's one-call wrapper of a device-module member (ms-swift's ``get_device_count()``)
is a helper of kind ``call:<member>`` / ``run:<member>``, decided from its body; a portable
port writes its call for ``torch.cuda.<member>()`` called without arguments."""

from __future__ import annotations

import ast
import textwrap

import pytest
from fix.goldens import migrate_cli
from porting import port
from trees import write

from migrate.scan.helper_finder import find_helpers
from migrate.scan.project import _facts_from_data
from migrate.scan.project.facts import _facts_data

# ms-swift's swift/utils/torch_utils.py (before 43ee77cd9), with its NPU check imported
COUNT = """\
    import gc

    import torch
    from transformers import is_torch_npu_available


    def is_torch_cuda_available():
        return torch.cuda.is_available()


    def get_device_count() -> int:
        if is_torch_npu_available():
            return torch.npu.device_count()
        elif is_torch_cuda_available():
            return torch.cuda.device_count()
        else:
            return 0


    def gc_collect() -> None:
        gc.collect()
        if is_torch_npu_available():
            torch.npu.empty_cache()
        elif is_torch_cuda_available():
            torch.cuda.empty_cache()
    """


def kinds(code: str) -> dict[str, str]:
    return {n: h.kind for n, h in find_helpers(ast.parse(textwrap.dedent(code))).items()}


def test_a_wrapper_is_found_from_its_body_and_one_that_does_more_is_not():
    assert kinds(COUNT) == {"get_device_count": "call:device_count"}


def test_ternary_returns_a_fall_through_and_a_statement_wrapper():
    code = """\
        import torch

        def current():
            "The current device's index."
            return torch.npu.current_device() if is_npu() else torch.cuda.current_device()

        def sync():
            if is_npu():
                return torch.npu.synchronize()
            return torch.cuda.synchronize()

        def empty():
            if is_npu():
                torch.npu.empty_cache()
            elif torch.mps.is_available():
                torch.mps.empty_cache()
            elif torch.cuda.is_available():
                torch.cuda.empty_cache()
        """
    assert kinds(code) == {
        "current": "call:current_device",
        "sync": "call:synchronize",
        "empty": "run:empty_cache",
    }


@pytest.mark.parametrize(
    "code",
    [
        # CUDA only
        "def n():\n    return torch.cuda.device_count() if ok() else 0\n",
        # two members
        "def n():\n    return torch.npu.device_count() if npu() else torch.cuda.current_device()\n",
        # a required argument
        "def n(i):\n    return torch.npu.device_count() if npu() else torch.cuda.device_count()\n",
        # arguments passed on
        "def n():\n    return torch.npu.memory_allocated(0) if npu() else torch.cuda.memory_allocated(0)\n",
        # the CUDA call runs after the NPU one too
        "def s():\n    if npu():\n        torch.npu.synchronize()\n    torch.cuda.synchronize()\n",
        # returns on one arm, drops the value on the other
        "def s():\n    if npu():\n        return torch.npu.synchronize()\n"
        "    else:\n        torch.cuda.synchronize()\n",
    ],
)
def test_what_is_no_wrapper(code):
    assert kinds("import torch\n" + code) == {}


def test_the_wrapper_defined_in_the_file_is_called_and_a_second_apply_changes_nothing():
    code = textwrap.dedent(COUNT) + textwrap.dedent(
        """\


        def main():
            if torch.cuda.device_count() == 1:
                n = torch.cuda.device_count()
            torch.cuda.device_count()
            return torch.cuda.device_count(0)
        """
    )
    out = port(code)
    assert out.endswith(
        "def main():\n"
        "    if get_device_count() == 1:\n"
        "        n = get_device_count()\n"
        "    get_device_count()\n"
        "    return (torch.npu if is_torch_npu_available() else torch.cuda).device_count(0)\n"
    )  # with an argument: as before
    # the wrapper's own arms, and the check it calls, are not routed through it
    assert "        return torch.cuda.device_count()\n" in out
    assert "    return torch.cuda.is_available()" in out
    assert port(out) == out


def test_a_wrapper_doing_more_is_not_used():
    code = (
        textwrap.dedent(COUNT)
        + "\n\ndef main():\n    torch.cuda.empty_cache()\n    return torch.cuda.device_count()\n"
    )
    main = port(code).split("def main():")[1]
    assert main.endswith("    return get_device_count()\n")
    assert "gc_collect()" not in main and "torch.cuda.empty_cache()" not in main  # ported as before


def test_a_statement_wrapper_stands_only_for_a_call_whose_value_is_dropped():
    code = """\
        import torch
        from transformers import is_torch_npu_available


        def empty():
            if is_torch_npu_available():
                torch.npu.synchronize()
            else:
                torch.cuda.synchronize()


        def main():
            torch.cuda.synchronize()
            x = torch.cuda.synchronize()
        """
    out = port(code).split("def main():")[1]
    assert out.startswith("\n    empty()\n")
    assert "x = empty()" not in out


def test_the_wrapper_imported_from_a_sibling_module_is_called(tmp_path):
    write(
        tmp_path,
        {
            "kit/__init__.py": "",
            "kit/utils.py": COUNT,
            "kit/train.py": """\
                import torch

                from kit.utils import get_device_count


                def devices():
                    if torch.cuda.device_count() == 1:
                        return 1
                    return get_device_count()
                """,
            "kit/other.py": "import torch\n\n\ndef devices():\n    return torch.cuda.device_count()\n",
        },
    )
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    train = (tmp_path / "kit" / "train.py").read_text()
    assert "    if get_device_count() == 1:\n" in train
    assert train.count("import get_device_count") == 1
    other = (tmp_path / "kit" / "other.py").read_text()  # imported as the project's helper
    assert (
        other == "from kit.utils import get_device_count\n\n\ndef devices():\n    return get_device_count()\n"
    )
    assert (tmp_path / "kit" / "utils.py").read_text() == textwrap.dedent(COUNT)  # left alone
    before = {p: p.read_text() for p in tmp_path.rglob("*.py")}
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    assert {p: p.read_text() for p in tmp_path.rglob("*.py")} == before


def test_a_wrapper_survives_the_discovery_cache_and_a_kind_of_no_member_does_not():
    helper = {
        "kind": "call:device_count",
        "module": "a.b",
        "name": "n",
        "call": True,
        "ours": False,
        "publics": [],
    }
    data = {
        "helpers": [helper],
        "npu_arms": [],
        "uses": [],
        "relative_imports": False,
        "run_by_path": [],
        "checks": [],
    }
    facts = _facts_from_data(data)
    assert facts is not None and facts[0][0].kind == "call:device_count"
    assert _facts_data(facts)["helpers"] == [helper]
    for kind in ("call:", "call:a b", "pass:device_count"):
        assert _facts_from_data({**data, "helpers": [{**helper, "kind": kind}]}) is None


def test_the_check_a_wrapper_calls_is_not_routed_through_it():
    code = """\
        import torch
        from transformers import is_torch_npu_available


        def gpus():
            n = torch.cuda.device_count()
            return n


        def count():
            if is_torch_npu_available():
                return torch.npu.device_count()
            if gpus():
                return torch.cuda.device_count()
            return 0


        def main():
            return torch.cuda.device_count()
        """
    out = port(code)
    gpus = out.split("def gpus():")[1].split("def count():")[0]
    assert "count()" in gpus and "n = count()" not in gpus  # ported as before: count() would call itself
    assert out.endswith("def main():\n    return count()\n")
