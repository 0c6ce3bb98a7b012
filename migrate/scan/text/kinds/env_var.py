"""Kind ``env-var`` in text files: CUDA/NCCL environment variables in scripts, images and
configs (the table and its verdicts: migrate.scan.tables.env_vars).

The message and fix title may use ``{name}``, ``{target}`` (the replacement) and ``{note}``,
as the Python engine's env-var kind does. A name is matched as a whole word
(``MY_CUDA_VISIBLE_DEVICES_BACKUP`` is not ``CUDA_VISIBLE_DEVICES``) anywhere outside
comments: ``export X=``, ``X=... cmd``, ``$X``, ``${X}``, ``ENV X``, YAML keys and ``- X=1``
list items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate.core.findings import Finding
from migrate.core.kinds import Token, rule_kind
from migrate.core.rules import Rule
from migrate.scan.tables.env_vars import KIND, PARAMS, EnvEntry, lookup_env_var, table_for, verdict
from migrate.scan.text.textfile import TextFile

_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
_ASSIGNED = re.compile(r"[ \t]*[=:][ \t]*[\"']?([0-9][0-9, \t]*[0-9])")


def tokens(rule: Rule, rules) -> set[Token]:
    """Its variable names and prefixes (shared with the Python env-var kind)."""
    p = rule.params
    return {Token(str(n)) for n in [*(p.get("vars") or {}), *(p.get("prefixes") or {})]}


@rule_kind(KIND, engine="text", params=PARAMS, tokens=tokens)
def scan_env_vars(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    wanted = {r.code for r in rules}
    table = table_for(rules)
    cache: dict[str, EnvEntry | None] = {}
    findings: list[Finding] = []
    for m in _NAME.finditer(tf.masked):
        name = m.group()
        if name not in cache:
            cache[name] = lookup_env_var(name, table)
        entry = cache[name]
        if entry is None or entry[0].code not in wanted:
            continue
        assigned = _ASSIGNED.match(tf.masked, m.end())
        replacement, note = verdict(entry, name, assigned.group(1) if assigned else None)
        values = {"name": name, "target": replacement or "", "note": note}
        f = tf.finding(entry[0], m.start(), m.end(), values, replacement)
        if f is not None:
            findings.append(f)
    return findings
