"""Every device-generic name the `portable:` forms write exists in the installed torch.

The forms live in the rule rows (`portable:`) and in migrate/core/targets.py (DEVICE_FORMS);
each ``torch.x.y`` they spell is resolved attribute by attribute on the real torch module, as
the NPU forms are checked against the torch_npu wheel (test_npu_names_exist.py). Names an
NPU arm spells (``torch.npu.X`` inside ``hasattr(torch, "npu")``) are the NPU forms, checked there.
"""

from __future__ import annotations

import re

import pytest

from migrate.core.rules import load_rules
from migrate.core.targets import DEVICE_FORMS, expand

torch = pytest.importorskip("torch")

_NAME = re.compile(r"(?<![\w.])torch(?:\.[A-Za-z_]\w*)+")


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _forms():
    for rule in load_rules():
        for text in _strings(rule.portable):
            yield rule.code, expand(text)
        for example in rule.examples:
            if "portable" in example:
                yield f"{rule.code} example", example["portable"]
    for key, text in DEVICE_FORMS.items():
        yield key, text


def _resolves(name: str) -> bool:
    obj = torch
    for part in name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


FORMS = list(_forms())


def test_there_are_portable_forms():
    codes = {code for code, _ in FORMS}
    assert {"MIG101", "MIG201", "MIG202", "MIG310", "MIG410"} <= codes


@pytest.mark.parametrize("where,text", FORMS, ids=[w for w, _ in FORMS])
def test_generic_names_exist_in_installed_torch(where, text):
    names = [n for n in _NAME.findall(text) if not n.startswith(("torch.npu", "torch.cuda"))]
    missing = [n for n in names if not _resolves(n)]
    assert missing == [], f"{where}: not in torch {torch.__version__}: {missing}"


def test_resolver_tells_present_from_missing():
    assert _resolves("torch.accelerator.synchronize")
    assert _resolves("torch.distributed.get_default_backend_for_device")
    assert not _resolves("torch.accelerator.manual_seed_all")


def test_device_forms_evaluate_on_this_machine():
    """The forms are expressions that run here (CPU): device type "cpu", amp type "cuda"."""
    env = {"torch": torch}
    assert eval(DEVICE_FORMS["device_type"], env) == "cpu"
    assert eval(DEVICE_FORMS["amp_device_type"], env) == "cuda"
    backend = expand("torch.distributed.get_default_backend_for_device({device_type})")
    assert eval(backend, env) == "gloo"


def test_unknown_portable_key_fails_loudly(tmp_path):
    from migrate.core.errors import RuleError

    (tmp_path / "r.yaml").write_text(
        "rules:\n- code: MIG999\n  name: x-y\n  kind: qualified-name\n  category: auto\n"
        "  message: m\n  fix_title: t\n  params: {names: {torch.cuda.x: torch.npu.x}}\n"
        "  portable: {nmaes: {}}\n")
    with pytest.raises(RuleError, match="unknown portable key .nmaes. .known: default, names."):
        load_rules(tmp_path)
