"""Import-aware matching of torch.cuda and other named APIs."""

from __future__ import annotations


def test_aliases_are_resolved(fixed):
    code = """
    import torch as th
    th.cuda.synchronize()
    n = th.cuda.device_count()
    """
    out = fixed(code)
    assert "th.npu.synchronize()" in out and "th.npu.device_count()" in out


def test_from_import_of_module_keeps_local_name(fixed, found):
    code = """
    from torch import cuda
    cuda.empty_cache()
    """
    assert found(code) == [("MIG101", 2)]
    assert fixed(code).startswith("\nfrom torch_npu import npu as cuda\n")


def test_from_import_of_amp_names(fixed):
    code = """
    from torch.cuda.amp import autocast as ac, GradScaler
    with ac():
        pass
    """
    out = fixed(code)
    assert "from torch_npu.npu.amp import autocast as ac, GradScaler" in out
    assert "with ac():" in out


def test_unrelated_names_containing_cuda_do_not_fire(found):
    code = """
    import my_cuda_utils
    from my_cuda_utils import cuda_sync
    my_cuda_utils.cuda.synchronize()
    cuda_sync()
    use_cuda = True
    def cuda():
        return 1
    """
    assert found(code) == []


def test_local_variable_named_torch_is_not_an_import(found):
    code = """
    def f(torch):
        return torch.cuda.is_available()
    """
    assert found(code) == []


def test_multiline_chain_with_comment_reports_without_fix():
    import textwrap

    from migrate.core.rules import default_rules
    from migrate.scan.engine import scan_text

    code = textwrap.dedent("""
    import torch
    n = (torch  # the module
         .cuda.device_count())
    """)
    fs = scan_text(code, "t.py", "python", default_rules())
    assert [(f.rule, f.line, f.category, f.fix) for f in fs if f.rule.startswith("MIG1")] == [
        (fs[0].rule, 3, "manual", None)
    ]


def test_setup_py_dependencies(found):
    code = """
    from setuptools import setup
    REQUIRED = ["torch==2.3.0+cu121", "numpy"]
    setup(
        name="x",
        install_requires=REQUIRED + ["flash_attn>=2.5", "einops"],
        extras_require={"quant": ["bitsandbytes", "cupy-cuda12x"]},
    )
    print("flash-attn")
    notes = ["triton"]
    """
    assert found(code) == []  # only setup.py files
    import textwrap

    from migrate.core.rules import default_rules
    from migrate.scan.engine import scan_text

    found_in_setup = scan_text(textwrap.dedent(code), "pkg/setup.py", "python", default_rules())
    got = [(f.rule, f.line) for f in found_in_setup]
    # torch 2.3.0 also rules out torch_npu 2.14.0 (MIG750)
    assert got == [("MIG720", 3), ("MIG750", 3), ("MIG721", 6), ("MIG727", 7), ("MIG726", 7)]
