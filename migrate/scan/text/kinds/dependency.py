"""Kind ``dependency`` in text files: CUDA-only packages in requirement files, pyproject /
setup.cfg / conda files and install lines (the table: migrate.scan.tables.dependencies).

The message and fix title may use ``{package}`` (as written), ``{suggestion}`` and
``{version}`` (the text matched by ``version_pattern``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate.core.findings import Finding
from migrate.core.kinds import Token, rule_kind
from migrate.core.rules import Rule
from migrate.scan.tables.dependencies import KIND, PARAMS, suggestion_for
from migrate.scan.tables.requirements import Requirement, hash_pinned
from migrate.scan.text.dep_sources import locate
from migrate.scan.text.textfile import TextFile

_ALNUM = re.compile(r"[a-z0-9]+")
_GLOB_CLASS = re.compile(r"\[[^\]]*\]")


def _tokens(rule: Rule, rules) -> set[Token]:
    """The longest alphanumeric run of each package name or glob (``flash-attn`` ->
    ``flash``, which also covers ``flash_attn``); none (always run) if a name has none."""
    words = set()
    for name in rule.params.get("packages") or {}:
        chunks = _ALNUM.findall(_GLOB_CLASS.sub("-", str(name).lower()))
        if not chunks:
            return set()
        words.add(Token(max(chunks, key=len)))
    return words


@rule_kind(KIND, engine="text", params=PARAMS, tokens=_tokens)
def scan_dependencies(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    active = list(rules)
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
    if replace is not None and hash_pinned(tf.text, req.start):
        replace = None  # a new version would not match the pinned --hash: a person decides
    return tf.finding(rule, m.start(), m.end(), values, None if replace is None else str(replace))
