"""The CUDA-only package table: one lookup for requirement files, pyproject/setup.cfg,
install lines in scripts and images, and setup.py lists alike.

A rule row of kind ``dependency``::

    params:
      packages: {flash-attn: "remove; ...", "cupy-cuda*": "..."}   # normalized name or glob
      version_pattern: '\\+cu\\d+'   # optional: fire only when the version part matches
      replace: '+cpu'                # optional: replacement for the matched version text

Names are compared after PEP 503 normalization (``flash_attn`` is ``flash-attn``), so a
package whose name merely starts with a listed one (``flash-attn-helper``) is not flagged.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

from migrate.core.kinds import param
from migrate.core.rules import Rule
from migrate.core.schema import mapping, regex
from migrate.scan.tables.requirements import normalize

KIND = "dependency"
PARAMS = {
    "packages": mapping(param(str), required=True, doc="package name or glob -> suggestion"),
    "version_pattern": param(str, check=regex, doc="fire only when the version part matches"),
    "replace": param(str, doc="replacement for the text version_pattern matched"),
}


@lru_cache(maxsize=256)
def _table(code: str, items: tuple[tuple[str, str], ...]):
    exact = {normalize(k): v for k, v in items if not any(c in k for c in "*?[")}
    globs = [(normalize(k), v) for k, v in items if any(c in k for c in "*?[")]
    return exact, globs


def suggestion_for(rule: Rule, name: str) -> str | None:
    """The rule's suggestion for normalized package ``name``, or None if not listed."""
    packages = rule.params.get("packages") or {}
    exact, globs = _table(rule.code, tuple((str(k), str(v or "")) for k, v in packages.items()))
    if name in exact:
        return exact[name]
    for pattern, text in globs:
        if fnmatchcase(name, pattern):
            return text
    return None
