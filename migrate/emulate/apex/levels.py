"""The opt levels and dynamic loss-scale constants of apex.amp (opt_levels.yaml beside this
module), read into typed records; a malformed file fails with its path and the bad key."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import torch

from migrate.ops.registry import load_yaml

PATH = Path(__file__).resolve().parent / "opt_levels.yaml"
_DTYPES = {None: None, "float32": torch.float32, "float16": torch.float16}


@dataclass(frozen=True)
class Properties:
    """What ``amp.initialize`` does for one opt level, after the user's overrides."""

    opt_level: str
    brief: str
    cast_model_type: torch.dtype | None
    patch_torch_functions: bool
    keep_batchnorm_fp32: bool | None
    master_weights: bool | None
    loss_scale: float | str  # a number or "dynamic"

    def overridden(self, **given) -> Properties:
        """These properties with every argument that is not None put in (apex's overrides;
        ``keep_batchnorm_fp32`` may be the string "True" or "False", ``loss_scale`` a number
        as a string)."""
        changes = {k: v for k, v in given.items() if v is not None}
        if isinstance(changes.get("keep_batchnorm_fp32"), str):
            changes["keep_batchnorm_fp32"] = {"True": True, "False": False}[changes["keep_batchnorm_fp32"]]
        if "loss_scale" in changes:
            changes["loss_scale"] = _loss_scale(changes["loss_scale"])
        return replace(self, **changes)


@dataclass(frozen=True)
class Dynamic:
    init_scale: float
    scale_factor: float
    backoff: float
    scale_window: int
    max_loss_scale: float


def _loss_scale(value) -> float | str:
    return "dynamic" if value == "dynamic" else float(value)


def _level(name: str, row: dict) -> Properties:
    return Properties(
        name,
        str(row["brief"]),
        _DTYPES[row["cast_model_type"]],
        bool(row["patch_torch_functions"]),
        None if row["keep_batchnorm_fp32"] is None else bool(row["keep_batchnorm_fp32"]),
        None if row["master_weights"] is None else bool(row["master_weights"]),
        _loss_scale(row["loss_scale"]),
    )


@cache
def load() -> tuple[dict[str, Properties], Dynamic]:
    raw = load_yaml(PATH)
    try:
        levels = {str(name): _level(str(name), row) for name, row in raw["levels"].items()}
        dyn = raw["dynamic"]
        dynamic = Dynamic(
            float(dyn["init_scale"]),
            float(dyn["scale_factor"]),
            float(dyn["backoff"]),
            int(dyn["scale_window"]),
            float(dyn["max_loss_scale"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{PATH}: bad or missing key: {exc}") from exc
    return levels, dynamic


def opt_level(name: str) -> Properties:
    levels = load()[0]
    if name not in levels:
        known = ", ".join(map(repr, levels))
        raise RuntimeError(f"Unexpected optimization level {name}. Options are {known}.")
    return levels[name]
