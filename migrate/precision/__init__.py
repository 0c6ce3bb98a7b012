"""Precision alignment: dump a model on each machine, compare offline, name the faulty layer.

    import migrate.precision as mp

    with mp.dump(model, "ref_dump", inputs=True):      # hooks on every module
        model(x)
    result = mp.compare_dumps("ref_dump", "npu_dump", gate="gate.yaml")
    assert result, result.first_divergence             # truthy when the gate passes
    mp.replay_model(model, "ref_dump").culprit         # the module that introduces error

Nothing here imports torch or safetensors until a function runs.
"""

from __future__ import annotations

from migrate.precision.checks import IncompatibleDumps
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.manifest import Dump
from migrate.precision.replay import replay_model
from migrate.precision.result import ComparisonResult
from migrate.precision.thresholds import Gate, load_gate

__all__ = [
    "ComparisonResult",
    "Dump",
    "Gate",
    "IncompatibleDumps",
    "compare_dumps",
    "dump",
    "load_gate",
    "replay_model",
]
