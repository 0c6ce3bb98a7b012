"""Fixtures for the precision tests: build a model from a spec and dump it in-process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
# The suite runs as 2 workers on 2 shared cores: intra-op threads only add barrier waits to
# the many small ops of a dump (a t5 dump took 1.0-1.5 s on two threads, 0.1 s on one).
torch.set_num_threads(1)


def _build(spec: str, dtype: str | None, env: dict | None, monkeypatch):
    from migrate.precision.runner import prepare

    for key in ("PREC_PERTURB", "PREC_PERTURB_ONE", "PREC_NAN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    try:
        return prepare(f"prec_models:{spec}", "cpu", dtype)
    finally:
        for key in env or {}:
            monkeypatch.delenv(key, raising=False)


@pytest.fixture
def build(monkeypatch):
    """``build(spec, dtype=None, env=None) -> (model, args, kwargs)``."""
    return lambda spec, dtype=None, env=None: _build(spec, dtype, env, monkeypatch)


@pytest.fixture
def make_dump(build):
    """``make_dump(spec, out_dir, dtype=None, env=None, **dump_kwargs) -> out_dir``."""
    from migrate.precision.dumper import dump

    def run(spec, out, dtype=None, env=None, **kw):
        model, args, kwargs = build(spec, dtype, env)
        with torch.no_grad(), dump(model, out, **kw):
            model(*args, **kwargs)
        return Path(out)

    return run
