"""The decomposition table (as torch._decomp): rewrite rules registered by decorator and
discovered by walking ``migrate.ops.decompose.rules`` with :class:`migrate.core.registry.Registry`.
Adding a rule is adding a module to that package; no list to edit.

A rule is ``fn(node, b) -> list of new output values | Decline``: ``node`` is an onnx_ir Node,
``b`` a :class:`migrate.ops.decompose.build.Builder` that creates nodes before ``node``.
Returning a :class:`migrate.ops.decompose.build.Decline` keeps the node; its reason goes to
the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from migrate.core.registry import Registry, placeholders

RULES_PACKAGE = "migrate.ops.decompose.rules"


@dataclass(frozen=True)
class Decomposition:
    name: str
    op: str
    domain: str
    emits: tuple[str, ...]
    fn: Callable
    doc: str = ""


def _check(name: str, member: Decomposition, _meta: dict) -> None:
    left = placeholders({"docstring": member.doc, "emits": list(member.emits), "op": member.op})
    if left:
        raise ValueError(f"is a scaffold: fill in {', '.join(left)} and its body")
    if not member.emits:
        raise ValueError("declares no emitted ops (emits=[...])")
    if not member.doc:
        raise ValueError("has no docstring (its first line is the rule's description)")
    if not callable(member.fn):
        raise TypeError("is not callable")


DECOMPOSITIONS: Registry[Decomposition] = Registry("decomposition", RULES_PACKAGE, _check)


def decomposition(name: str, op: str, emits: list[str], domain: str = "ai.onnx"):
    """Register ``fn`` as the rewrite ``name`` of ``domain::op``; a duplicate name fails."""

    def wrap(fn: Callable) -> Callable:
        DECOMPOSITIONS.add(
            name,
            Decomposition(
                name, op, domain, tuple(sorted(set(emits))), fn, (fn.__doc__ or "").strip().split("\n")[0]
            ),
        )
        return fn

    return wrap


def load_all() -> dict[tuple[str, str], list[Decomposition]]:
    """(domain, op) -> rules, in registration order."""
    table: dict[tuple[str, str], list[Decomposition]] = {}
    for _name, rule in DECOMPOSITIONS.items():
        table.setdefault((rule.domain, rule.op), []).append(rule)
    return table


def rules_for(op: str, domain: str = "ai.onnx") -> list[Decomposition]:
    return load_all().get((domain or "ai.onnx", op), [])


def decomposition_for(op: str, domain: str = "ai.onnx") -> str | None:
    """Names of the rules that can rewrite this op ("gelu-erf|gelu-tanh"), or None."""
    names = [d.name for d in rules_for(op, domain)]
    return "|".join(names) or None
