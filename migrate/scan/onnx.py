"""The ``onnx`` engine's one kind: op-census findings for *.onnx files (rules/onnx.yaml).
The census itself is migrate.ops (it needs the ``onnx`` extra, imported only when run)."""

from __future__ import annotations

from migrate.core.kinds import Token, param, rule_kind
from migrate.core.schema import one_of


def _tokens(rule, rules) -> set[Token]:
    return set()  # ONNX files are binary: no text prefilter


@rule_kind(
    "onnx-census",
    engine="onnx",
    tokens=_tokens,
    params={
        "when": param(
            str,
            required=True,
            doc="which census verdict the row reports",
            check=one_of("unsupported", "restricted", "decomposable", "opset-above", "custom-domain"),
        )
    },
)
def run(path, rel, rules):
    from migrate.ops.scan_hook import scan_onnx

    return scan_onnx(path, rel, rules)
