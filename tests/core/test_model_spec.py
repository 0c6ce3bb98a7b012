"""The one MOD:FN loader: every accepted form, and one clear UsageError for every bad one."""

from __future__ import annotations

import sys

import pytest

from migrate.core.errors import UsageError
from migrate.core.model_spec import load_model_spec, load_spec

FACTORIES = """
import sys

class Model:
    def __call__(self, *a, **k):
        return a

def two():
    return Model(), 1

def three():
    return Model(), [1, 2], {"k": 3}

def as_dict():
    return {"model": Model(), "args": (1,), "loss": len}

def bad_dict():
    return {"model": Model(), "arg": (1,)}

def not_tuple():
    return Model()

def raises():
    raise RuntimeError("boom\\nsecond line")

def exits():
    sys.exit(4)

def bad_kwargs():
    return Model(), (), [1]

not_callable = 3
"""


@pytest.fixture
def factories(tmp_path, monkeypatch):
    path = tmp_path / "facts.py"
    path.write_text(FACTORIES)
    (tmp_path / "importexit.py").write_text("raise SystemExit(1)\n")
    monkeypatch.chdir(tmp_path)
    yield path
    for name in ("facts", "importexit", "_migrate_spec_facts"):
        sys.modules.pop(name, None)


def test_accepted_forms(factories):
    model, args, kwargs = load_spec(f"{factories}:two")
    assert args == (1,) and kwargs == {}
    assert load_spec("facts:three")[1:] == ((1, 2), {"k": 3})  # dotted, from the cwd
    got = load_model_spec(f"{factories}:as_dict", "--torch")
    assert got.args == (1,) and got.loss is len and got.optimizer is None


@pytest.mark.parametrize(
    "spec, says",
    [
        ("nocolon", "expected MODULE:FUNCTION"),
        ("facts:", "expected MODULE:FUNCTION"),
        ("no_such_module_xyz:f", "cannot import no_such_module_xyz"),
        ("missing/file.py:f", "no such file"),
        ("importexit:f", "SystemExit"),
        ("facts:nothing", "no callable 'nothing'"),
        ("facts:not_callable", "no callable 'not_callable'"),
        ("facts:not_tuple", "must return"),
        ("facts:bad_dict", "unknown: arg"),
        ("facts:raises", "RuntimeError: boom$"),
        ("facts:exits", "SystemExit: 4"),
        ("facts:bad_kwargs", "kwargs must be a dict"),
    ],
)
def test_every_bad_form_is_one_usage_error_line(factories, spec, says):
    with pytest.raises(UsageError, match=says) as info:
        load_spec(spec, "--torch")
    assert "\n" not in str(info.value) and str(info.value).startswith("--torch")
