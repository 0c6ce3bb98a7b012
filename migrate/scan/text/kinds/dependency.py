"""Rule kind ``dependency``: CUDA-only packages in requirement files and install lines.

    params:
      packages: {flash-attn: "remove; ...", "cupy-cuda*": "..."}   # normalized name or glob
      version_pattern: '\\+cu\\d+'   # optional: fire only when the version part matches
      replace: '+cpu'                # optional: replacement for the matched version text

Names are compared after PEP 503 normalization (``flash_attn`` is ``flash-attn``), so a
package whose name merely starts with a listed one (``flash-attn-helper``) is not flagged.
The message and fix title may use ``{package}`` (as written), ``{suggestion}`` and
``{version}`` (the text matched by ``version_pattern``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from functools import lru_cache

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.scan.text.textfile import TextFile, applies
from migrate.scan.text.dep_sources import locate
from migrate.scan.tables.requirements import Requirement, normalize

KIND = "dependency"


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


def scan_dependencies(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    active = [r for r in rules if r.kind == KIND and applies(r, tf.kind)]
    if not active:
        return []
    findings: list[Finding] = []
    for req in locate(tf):
        for rule in active:
            f = _match(tf, rule, req)
            if f is not None:
                findings.append(f)
    return findings


def _match(tf: TextFile, rule: Rule, req: Requirement) -> Finding | None:
    suggestion = suggestion_for(rule, req.name)
    if suggestion is None:
        return None
    values = {"package": req.raw_name, "suggestion": suggestion, "version": ""}
    pattern = rule.params.get("version_pattern")
    if not pattern:
        return tf.finding(rule, req.start, req.end, values)
    m = re.compile(str(pattern)).search(tf.text, req.spec_start, req.spec_end)
    if m is None:
        return None
    values["version"] = m.group()
    replace = rule.params.get("replace")
    if replace is not None and _hash_pinned(tf.text, req.start):
        replace = None  # a new version would not match the pinned --hash: a person decides
    return tf.finding(rule, m.start(), m.end(), values,
                      None if replace is None else str(replace))


def _hash_pinned(text: str, pos: int) -> bool:
    """Whether the requirement line at ``pos`` (with its ``\\`` continuations) pins a
    ``--hash``: pip's hash-checking mode rejects any other file."""
    end = pos
    while True:
        nl = text.find("\n", end)
        if nl < 0:
            end = len(text)
            break
        if not text[:nl].rstrip("\r").endswith("\\"):
            end = nl
            break
        end = nl + 1
    return "--hash" in text[pos:end]
