"""--target portable ports names imported from torch.cuda.amp with all their uses
(migrate/scan/python/portable_imports.py), spelled for the oldest torch the code supports."""

from __future__ import annotations

import textwrap
from functools import partial

import pytest

from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan
from migrate.scan.project import FileDevices

RULES = list(default_rules())
AMP = '"npu" if is_npu_available() else "cuda"'

# FunASR / lm-eval style: autocast imported by name, used as a context manager
CODE = """\
    import torch
    from torch.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd


    class Double(torch.autograd.Function):
        @staticmethod
        @custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @custom_bwd
        def backward(ctx, g):
            return g * 2


    def step(model, x, use_amp):
        scaler = GradScaler(enabled=use_amp)
        with autocast(use_amp):
            y = Double.apply(model(x))
        return scaler, y
    """


def port(code: str, floor=None) -> str:
    devices = FileDevices(min_torch=floor)
    scan = partial(engine_scan, target="portable", devices=devices)
    text, _, _, error = fix_text(textwrap.dedent(code), "t.py", "python", RULES, scan, unsafe=False)
    assert error is None
    return text


def test_on_a_declared_recent_torch_the_generic_forms_are_used():
    out = port(CODE, floor=(2, 4))
    assert "from torch.cuda.amp" not in out  # every use ported: the import goes
    assert f"@torch.amp.custom_fwd(device_type={AMP}, cast_inputs=torch.float32)" in out
    assert f"@torch.amp.custom_bwd(device_type={AMP})" in out
    assert f"scaler = torch.amp.GradScaler({AMP}, enabled=use_amp)" in out
    # torch.amp.autocast takes the device type first: the positional `enabled` is passed by name
    assert f"with torch.amp.autocast({AMP}, enabled=use_amp):" in out
    assert port(out, floor=(2, 4)) == out


def test_alone_the_spelling_is_one_every_torch_has():
    """No minimum declared and the file shows none: GradScaler and custom_fwd through the
    device module's own amp (torch.cuda.amp / torch.npu.amp), autocast (1.10) generic."""
    out = port(CODE)
    assert "torch.amp.GradScaler" not in out and "torch.amp.custom_fwd" not in out
    assert ".amp.GradScaler(enabled=use_amp)" in out and ".amp.custom_bwd\n" in out
    assert f"with torch.amp.autocast({AMP}, enabled=use_amp):" in out
    shown = port(CODE.replace("        return scaler, y\n", "        return scaler, torch.compile(y)\n"))
    assert ".amp.GradScaler(enabled=use_amp)" in shown  # 2.0 shown: still below 2.3
    assert "torch.amp.GradScaler" not in shown


@pytest.mark.parametrize("floor", [None, (2, 4)])
def test_the_port_computes_what_the_original_did_on_cpu(floor):
    torch = pytest.importorskip("torch")
    scope: dict = {}
    exec(compile(port(CODE, floor), "t.py", "exec"), scope)
    scaler, y = scope["step"](torch.nn.Identity(), torch.ones(2, requires_grad=True), False)
    assert y.tolist() == [2.0, 2.0] and not scaler.is_enabled()


def test_the_only_import_of_a_file_gives_its_line_to_import_torch():
    out = port("from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n")
    assert out.startswith("import torch\n\n\ndef is_npu_available() -> bool:\n")
    assert out.endswith(f"\n\n\nwith torch.amp.autocast({AMP}):\n    pass\n")


def test_a_name_passed_around_is_left_to_a_person():
    code = "from torch.cuda.amp import autocast\n\nCONTEXTS = [autocast]\n"
    assert port(code) == code
    (found,) = engine_scan(code, "t.py", "python", RULES, "portable")
    assert found.category == "manual"
