"""The libraries that need a minimum release to know NPUs (transformers, accelerate,
DeepSpeed ...): the scan's dependency rows (MIG752 in rules/dependency_compat.yaml), read
through :func:`migrate.scan.tables.dependency_versions.minimum_versions`, never copied."""

from __future__ import annotations

from functools import cache

from migrate.core.rules import Rule, default_rules
from migrate.scan.tables.dependency_versions import minimum_versions


@cache
def npu_floors() -> dict[str, tuple[str, Rule]]:
    """Normalized package name -> (first release with NPU support, the rule row)."""
    return minimum_versions(default_rules())
