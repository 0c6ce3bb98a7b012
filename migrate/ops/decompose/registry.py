"""The decomposition table, filled by a decorator (as torch._decomp): op -> rewrite rules.

A rule is ``fn(node, b) -> list of new output values | None``: ``node`` is an onnx_ir Node,
``b`` a :class:`migrate.ops.decompose.build.Builder` that creates nodes before ``node``.
Returning None declines; the rule sets ``b.declined`` to say why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

FAMILIES = ("gelu", "norm", "einsum", "mod")


@dataclass(frozen=True)
class Decomposition:
    name: str
    op: str
    domain: str
    emits: tuple[str, ...]
    fn: Callable
    doc: str = ""


_TABLE: dict[tuple[str, str], list[Decomposition]] = {}
_NAMES: set[str] = set()


def decomposition(name: str, op: str, emits: list[str], domain: str = "ai.onnx"):
    """Register ``fn`` as the rewrite ``name`` of ``domain::op``; duplicate names fail."""

    def wrap(fn: Callable) -> Callable:
        if name in _NAMES:
            raise ValueError(f"duplicate decomposition {name!r}")
        _NAMES.add(name)
        entry = Decomposition(name, op, domain, tuple(sorted(set(emits))), fn,
                              (fn.__doc__ or "").strip().split("\n")[0])
        _TABLE.setdefault((domain, op), []).append(entry)
        return fn

    return wrap


def load_all() -> dict[tuple[str, str], list[Decomposition]]:
    for family in FAMILIES:
        importlib.import_module(f"migrate.ops.decompose.{family}")
    return _TABLE


def rules_for(op: str, domain: str = "ai.onnx") -> list[Decomposition]:
    return load_all().get((domain or "ai.onnx", op), [])


def decomposition_for(op: str, domain: str = "ai.onnx") -> str | None:
    """Names of the rules that can rewrite this op ("gelu-erf|gelu-tanh"), or None."""
    names = [d.name for d in rules_for(op, domain)]
    return "|".join(names) or None
