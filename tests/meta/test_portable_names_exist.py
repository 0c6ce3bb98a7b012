"""Every torch name a portable port writes exists in the installed torch.

The forms live in the rule rows (`portable:`, with device placeholders), in their examples
and in the device helpers a port adds (migrate/core/device_helpers/template.py). Each
``torch.x.y`` they spell is resolved attribute by attribute on the real torch module, as the
NPU forms are checked against the torch_npu wheel (test_npu_names_exist.py). Names an NPU arm
spells (``torch.npu.X`` beside the CUDA name) are NPU forms, checked there; ``torch.cuda.X``
stays as the original wrote it.
"""

from __future__ import annotations

import re

import pytest

from migrate.core import device_helpers
from migrate.core.rules import load_rules

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
            yield rule.code, text
        for example in rule.examples:
            if "portable" in example:
                yield f"{rule.code} example", example["portable"]
    yield "device helper template", device_helpers.module_text()


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
    assert _resolves("torch.accelerator.current_accelerator")
    assert _resolves("torch.amp.GradScaler")
    assert not _resolves("torch.accelerator.manual_seed_all")


def test_no_form_tests_for_torch_npu_by_hasattr():
    """The NPU is reached through the accelerator, never by `hasattr(torch, "npu")`."""
    for where, text in FORMS:
        assert 'hasattr(torch, "npu")' not in text, where


def test_call_forms_name_the_torch_they_need():
    """A form that calls a torch API newer than 1.x states the torch it needs (min_torch), so
    a project that declares an older one gets the helper form instead."""
    for rule in load_rules():
        for key, form in (rule.portable.get("names") or {}).items():
            if isinstance(form, dict) and form.get("call", "").startswith("torch.amp."):
                assert form.get("min_torch"), f"{rule.code} {key}"


def test_unknown_portable_key_fails_loudly(tmp_path):
    from migrate.core.errors import RuleError

    (tmp_path / "r.yaml").write_text(
        "rules:\n- code: MIG999\n  name: x-y\n  kind: qualified-name\n  category: auto\n"
        "  message: m\n  fix_title: t\n  params: {names: {torch.cuda.x: torch.npu.x}}\n"
        "  portable: {nmaes: {}}\n"
    )
    with pytest.raises(RuleError, match="unknown portable key .nmaes. .known: default, names."):
        load_rules(tmp_path)
