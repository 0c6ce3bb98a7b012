"""A device-choosing chain gains an NPU arm before its fallback; the CUDA arm stays (as
peft's infer_device and Dolphin's detect_device were ported upstream)."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest
from porting import port

# peft/utils/other.py infer_device (before its NPU port)
PEFT = """\
    import torch


    def is_xpu_available():
        return False


    def infer_device():
        if torch.cuda.is_available():
            torch_device = "cuda"
        elif is_xpu_available():
            torch_device = "xpu"
        else:
            torch_device = "cpu"
        return torch_device
    """


def test_the_cuda_arm_stays_and_an_npu_arm_goes_before_the_fallback():
    out = port(PEFT)
    assert '    if torch.cuda.is_available():\n        torch_device = "cuda"\n' in out
    assert (
        '    elif is_xpu_available():\n        torch_device = "xpu"\n'
        '    elif is_npu_available():\n        torch_device = "npu"\n'
        '    else:\n        torch_device = "cpu"\n'
    ) in out
    assert out.count("def is_npu_available()") == 1  # a script defines the one check it uses
    assert port(out) == out
    namespace: dict = {}
    exec(compile(out, "t.py", "exec"), namespace)
    import torch

    assert namespace["infer_device"]() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_a_returned_device_and_a_one_line_else():
    code = """\
        import torch


        def detect_device(mps):
            if torch.cuda.is_available():
                return torch.device('cuda')
            elif mps:
                return torch.device('mps')
            else: return torch.device('cpu')
        """
    out = port(code)
    assert (
        "    elif is_npu_available():\n        return torch.device('npu')\n"
        "    else: return torch.device('cpu')\n"
    ) in out
    assert "return torch.device('cuda')" in out


def test_a_chain_without_a_fallback_gets_the_arm_at_its_end():
    code = """\
        import torch


        class Args:
            device = None

            def __post_init__(self):
                if self.device is None:
                    if torch.cuda.is_available():
                        self.device = "cuda"
                    elif torch.xpu.is_available():
                        self.device = "xpu"
                print(self.device)
        """
    out = port(code)
    assert (
        '            elif torch.xpu.is_available():\n                self.device = "xpu"\n'
        '            elif is_npu_available():\n                self.device = "npu"\n'
        "        print(self.device)\n"
    ) in out


def test_other_arms_get_their_twin_or_stay():
    # more than the device in the CUDA arm, or no alternative arm: its NPU twin; an NPU arm
    # already there: left
    code = """\
        import torch


        def a():
            if torch.cuda.is_available():
                torch.cuda.set_device(0)
                return "cuda"
            return "cpu"


        def b():
            device = "cpu"
            if torch.cuda.is_available():
                device = "cuda"
            return device


        def c(is_npu_available):
            if torch.cuda.is_available():
                return "cuda"
            elif is_npu_available():
                return "npu"
            else:
                return "cpu"
        """
    out = port(code)
    assert "elif get_device_type()" not in out and out.count("elif is_npu_available():") == 3
    assert '        device = "cuda"\n    elif is_npu_available():\n        device = "npu"\n' in out
    # a() does CUDA's work too: its NPU twin follows it, not a device switch in place
    assert (
        '        torch.cuda.set_device(0)\n        return "cuda"\n'
        '    elif is_npu_available():\n        torch.npu.set_device(0)\n        return "npu"\n'
    ) in out
    assert '    if torch.cuda.is_available():\n        return "cuda"\n    elif is_npu_available():' in out


def test_the_arm_asks_the_library_the_file_already_imports_from():
    # peft 0.4's infer_device, ported upstream with accelerate's own NPU check
    code = PEFT.replace(
        "    import torch\n\n\n    def is_xpu_available():\n        return False\n",
        "    import torch\n    from accelerate.utils import is_xpu_available\n",
    )
    out = port(code)
    assert out.startswith("import torch\nfrom accelerate.utils import is_npu_available, is_xpu_available\n")
    assert '    elif is_npu_available():\n        torch_device = "npu"\n    else:\n' in out
    assert "get_device_type" not in out
    assert port(out) == out
    # already bound (mmengine's own), under another name: used as it is, nothing imported
    bound = port(
        "import torch\nfrom mmengine.device import is_npu_available as npu_ok\n\n\n"
        "def pick(mlu):\n    if torch.cuda.is_available():\n        return 'cuda'\n"
        "    elif mlu:\n        return 'mlu'\n    return 'cpu'\n"
    )
    assert "    elif mlu:\n        return 'mlu'\n    elif npu_ok():\n        return 'npu'\n" in bound


# the shape of ms-swift's / LLaMA-Factory's device pickers before their NPU ports
EARLY = """\
    import torch
    from transformers.utils import is_torch_npu_available


    def pick_device():
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")


    def pick_name():
        if torch.cuda.is_available():
            device = "cuda"
        else:
            device = "cpu"
        return device


    def pick_ternary():
        return "cuda" if torch.cuda.is_available() else "cpu"
    """


def test_an_early_return_gets_a_second_one_with_the_projects_check():
    out = port(EARLY)
    assert (
        "    if torch.cuda.is_available():\n"
        '        return torch.device("cuda")\n'
        "    if is_torch_npu_available():\n"
        '        return torch.device("npu")\n'
        '    return torch.device("cpu")\n'
    ) in out
    assert (
        '    if torch.cuda.is_available():\n        device = "cuda"\n'
        '    elif is_torch_npu_available():\n        device = "npu"\n'
        '    else:\n        device = "cpu"\n'
    ) in out
    assert '"cuda" if torch.cuda.is_available() else "npu" if is_torch_npu_available() else "cpu"' in out
    assert " or is_torch_npu_available()" not in out and "def is_npu_available" not in out
    assert port(out) == out


def test_the_early_return_arm_runs_as_the_original_off_the_npu_and_picks_the_npu_on_it():
    import types

    out = port(EARLY.replace("from transformers.utils import is_torch_npu_available\n", ""))
    assert "    if is_npu_available():\n        return torch.device('npu')\n" in out.replace('"', "'")
    assert out.count("\ndef is_npu_available()") == 1
    namespace: dict = {}
    exec(compile(out, "t.py", "exec"), namespace)
    import torch

    assert namespace["pick_device"]() == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fake = types.SimpleNamespace(  # torch on an Ascend host (torch 2.1: no torch.accelerator)
        cuda=types.SimpleNamespace(is_available=lambda: False),
        npu=types.SimpleNamespace(is_available=lambda: True),
        device=lambda name: ("device", name),
    )
    namespace["torch"] = fake
    assert namespace["pick_device"]() == ("device", "npu")


def test_in_a_run_of_early_returns_the_arm_follows_the_cuda_one_and_is_found_again():
    code = """\
        import torch
        from transformers.utils import is_torch_npu_available


        def main(args):
            print("device for", args)
            if torch.cuda.is_available():
                return "cuda"
            if torch.backends.mps.is_available():
                return "mps"
            return "cpu"
        """
    out = port(code)
    assert (
        '    if torch.cuda.is_available():\n        return "cuda"\n'
        '    if is_torch_npu_available():\n        return "npu"\n'
        "    if torch.backends.mps.is_available():\n"
    ) in out
    assert port(out) == out
    # an NPU arm the code already has, before or after the CUDA one: nothing added
    before = code.replace(
        "            if torch.cuda.is_available():",
        '            if is_torch_npu_available():\n                return "npu"\n'
        "            if torch.cuda.is_available():",
    )
    assert port(before).count("is_torch_npu_available()") == 1


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_the_new_arms_are_ruff_format_clean(tmp_path):
    out = port(EARLY)
    (tmp_path / "t.py").write_text(out)
    run = subprocess.run(
        ["ruff", "format", "--check", "--diff", "--line-length", "100", "t.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


# the chained conditionals of torchchat / diffusers examples before their NPU ports
CHAINED = """\
    import torch
    from transformers.utils import is_torch_npu_available


    def pick():
        return "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


    def pick_xpu():
        device = 'cuda' if torch.cuda.is_available() else 'xpu' if torch.xpu.is_available() else 'cpu'
        return device
    """


def test_a_chained_conditional_gets_the_npu_arm_before_its_final_fallback():
    out = port(CHAINED)
    flat = " ".join(out.replace("(", " ").replace(")", " ").split())
    assert (
        'return "cuda" if torch.cuda.is_available else "mps" if torch.backends.mps.is_available '
        'else "npu" if is_torch_npu_available else "cpu"'
    ) in flat
    assert (
        "device = 'cuda' if torch.cuda.is_available else 'xpu' if torch.xpu.is_available "
        "else 'npu' if is_torch_npu_available else 'cpu'"
    ) in flat
    assert " or is_torch_npu_available" not in out and "get_device_type" not in out
    assert port(out) == out


def test_a_chained_conditional_answers_as_before_off_the_npu_and_npu_on_it():
    import types

    out = port(CHAINED.replace("from transformers.utils import is_torch_npu_available\n", ""))
    assert out.count("\ndef is_npu_available()") == 1
    namespace: dict = {}
    exec(compile(out, "t.py", "exec"), namespace)
    import torch

    mps = torch.backends.mps.is_available()
    assert namespace["pick"]() == ("cuda" if torch.cuda.is_available() else "mps" if mps else "cpu")
    no = types.SimpleNamespace(is_available=lambda: False)
    namespace["torch"] = types.SimpleNamespace(  # an Ascend host
        cuda=no,
        xpu=no,
        backends=types.SimpleNamespace(mps=no),
        npu=types.SimpleNamespace(is_available=lambda: True),
    )
    assert namespace["pick"]() == "npu" and namespace["pick_xpu"]() == "npu"


def test_a_chain_naming_the_npu_or_ending_elsewhere_is_not_given_an_arm():
    code = """\
        import torch
        from transformers.utils import is_torch_npu_available


        def a(other):
            return "cuda" if torch.cuda.is_available() else "npu" if is_torch_npu_available() else "cpu"


        def b(other):
            return "cuda" if torch.cuda.is_available() else "mps" if other else other
        """
    out = port(code)
    assert out.count('"npu" if is_torch_npu_available() else "cpu"') == 1  # a's own, unchanged
    assert 'else "mps" if other else other' in out  # b: its CUDA arm ported in place, as before
    assert 'else "npu" if is_torch_npu_available() else other' not in out


# torchchat's builder before its NPU port: one `if` per vendor, each naming the device
SEQUENCE = """\
    import torch
    from transformers.utils import is_torch_npu_available


    def pick():
        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
        if torch.xpu.is_available():
            device = "xpu"
        return device
    """


def test_an_if_among_vendor_ifs_gets_an_npu_if_after_it():
    out = port(SEQUENCE)
    assert (
        '    if torch.cuda.is_available():\n        device = "cuda"\n'
        '    if is_torch_npu_available():\n        device = "npu"\n'
        '    if torch.xpu.is_available():\n        device = "xpu"\n'
    ) in out
    assert " or is_torch_npu_available" not in out
    assert port(out) == out
    # a lone `if` with no other vendor beside it is ported in place, as before
    lone = port(SEQUENCE.replace('        if torch.xpu.is_available():\n            device = "xpu"\n', ""))
    assert "xpu" not in lone
    assert "    if is_torch_npu_available():\n" not in lone


def test_a_cuda_elif_after_project_vendor_checks_gets_its_npu_arm():
    code = """\
        import torch
        from transformers.utils import is_torch_npu_available

        mps_available = torch.backends.mps.is_available()


        def is_intel_xpu():
            return False


        def pick():
            if mps_available:
                return "mps"
            elif is_intel_xpu():
                return "xpu"
            elif torch.cuda.is_available():
                return "cuda"
            else:
                return "cpu"


        def pick_args(args):
            if args.xpu:
                args.device = "xpu"
            elif torch.cuda.is_available():
                args.device = "cuda"
            print(args.device)
        """
    out = port(code)
    assert (
        '    elif torch.cuda.is_available():\n        return "cuda"\n'
        '    elif is_torch_npu_available():\n        return "npu"\n'
        '    else:\n        return "cpu"\n'
    ) in out
    assert (
        '        args.device = "cuda"\n    elif is_torch_npu_available():\n        args.device = "npu"\n'
        "    print(args.device)\n"
    ) in out
    assert " or is_torch_npu_available" not in out  # the CUDA test would send the NPU to "cuda"
    assert port(out) == out


def test_an_arm_naming_the_device_and_what_goes_with_it_is_copied_for_the_npu():
    code = """\
        import torch
        from transformers.utils import is_torch_npu_available


        def pick():
            if torch.cuda.is_available():
                device = "cuda"
                dtype = torch.float16
            elif torch.backends.mps.is_available():
                device = "mps"
                dtype = torch.float32
            else:
                device = "cpu"
                dtype = torch.float32
            return device, dtype


        def early(args):
            if torch.cuda.is_available():
                args.device_map = "cuda"
                return "cuda"
            return "cpu"
        """
    out = port(code)
    assert (
        '    if torch.cuda.is_available():\n        device = "cuda"\n        dtype = torch.float16\n'
    ) in out
    assert (
        '    elif is_torch_npu_available():\n        device = "npu"\n        dtype = torch.float16\n'
        '    else:\n        device = "cpu"\n'
    ) in out
    assert (
        '        return "cuda"\n    if is_torch_npu_available():\n'
        '        args.device_map = "npu"\n        return "npu"\n    return "cpu"\n'
    ) in out
    assert " or is_torch_npu_available" not in out
    assert port(out) == out


def test_an_arm_with_other_cuda_work_is_not_copied():
    code = """\
        import torch
        from transformers.utils import is_torch_npu_available


        def pick():
            if torch.cuda.is_available():
                device = "cuda"
                torch.backends.cudnn.benchmark = True
            else:
                device = "cpu"
            return device
        """
    out = port(code)
    assert "elif is_torch_npu_available():" not in out
    assert "cudnn.benchmark = True" in out and out.count("cudnn") == 1


def _mixed(code: str) -> str:
    """``code`` with its first line break LF and every later one CRLF."""
    first, rest = textwrap.dedent(code).split("\n", 1)
    return first + "\n" + rest.replace("\n", "\r\n")


def test_the_arm_takes_the_files_newline_as_the_rest_of_the_port_does():
    # mixed endings: the file's newline is its first break's (LF), as the helper defined
    # with the arm and the imports are written
    out = port(_mixed(PEFT))
    assert '    elif is_npu_available():\n        torch_device = "npu"\n    else:\r\n' in out
    assert "def is_npu_available() -> bool:\n" in out
    # a CRLF file gets CRLF arms
    crlf = port(textwrap.dedent(PEFT).replace("\n", "\r\n"))
    assert '    elif is_npu_available():\r\n        torch_device = "npu"\r\n    else:\r\n' in crlf
    assert "\n" not in crlf.replace("\r\n", "")
