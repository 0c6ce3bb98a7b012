"""Misses of the first gap reports, beyond the rule examples: APIs bound by assignment or
`global`, torch.device(type=...), device strings in comprehensions, private torch._C CUDA
bindings, hand-written kernels that already have a fused path."""

from __future__ import annotations

import textwrap

from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text


def _rules(code: str, rel: str = "m.py") -> list[tuple[str, int]]:
    found = scan_text(textwrap.dedent(code), rel, "python", default_rules())
    return [(f.rule, f.line) for f in found]


def test_flash_attn_bound_through_global_is_a_use():
    code = """
    flash_attn_func = None

    def _load():
        global flash_attn_func
        from flash_attn import flash_attn_func as impl
        flash_attn_func = impl

    def attend(q, k, v):
        return flash_attn_func(q, k, v, causal=True)
    """
    assert ("MIG507", 10) in _rules(code)


def test_assignment_in_a_function_without_global_binds_nothing():
    code = """
    import flash_attn

    def attend(q, k, v, fa=None):
        fa = flash_attn.flash_attn_func
        return fa(q, k, v)

    def other(fa):
        return fa(1, 2, 3)
    """
    assert ("MIG507", 9) not in _rules(code)


def test_module_level_alias_of_an_imported_api():
    code = """
    import flash_attn.flash_attn_interface as fai
    attn_fn = fai.flash_attn_varlen_func
    out = attn_fn(q, k, v, cu, cu, 8, 8)
    """
    assert ("MIG507", 4) in _rules(code)


def test_device_type_keyword_and_comprehensions():
    code = """
    import torch
    a = torch.device(type="cuda", index=0)
    devices = [f"cuda:{i}" for i in range(4)]
    moved = [t.to(f"cuda:{i}") for i, t in enumerate(ts)]
    names = [f"layer{i}" for i in range(4)]
    """
    assert _rules(code) == [("MIG201", 3), ("MIG201", 4), ("MIG201", 5)]


def test_private_cuda_bindings_by_stem():
    code = """
    import torch
    n = torch._C._cuda_getDeviceCount()
    s = torch._C._CudaStreamBase
    t = torch._C._get_tracing_state()
    u = torch._C._cudart
    """
    assert _rules(code) == [("MIG109", 3), ("MIG109", 4), ("MIG109", 6)]


def test_eager_attention_is_advice_only_without_a_fused_path():
    eager = """
    def attention(q, k, v, scale):
        attn = (q @ k.transpose(-2, -1)) * scale
        return attn.softmax(dim=-1) @ v
    """
    fused = """
    import torch.nn.functional as F

    def attention(q, k, v, scale, fused):
        if fused:
            return F.scaled_dot_product_attention(q, k, v)
        attn = (q @ k.transpose(-2, -1)) * scale
        return attn.softmax(dim=-1) @ v
    """
    assert _rules(eager) == [("MIG905", 4)]
    assert _rules(fused) == []


def test_slurm_directives_are_read_in_comments_but_plain_comments_are_not():
    from migrate.scan.text.scanner import scan_text_file

    text = (
        "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH -G 4\n"
        "# old: srun --gres=gpu:2\nsrun --gpus-per-node=8 python t.py\n"
    )
    found = scan_text_file(text, "job.sh", "shell", default_rules())
    got = [
        (f.line, text.splitlines()[f.line - 1][f.column - 1 : f.end_column - 1])
        for f in found
        if f.rule == "MIG741"
    ]
    assert got == [(2, "--gres=gpu:8"), (3, "-G 4"), (5, "--gpus-per-node=8")]
