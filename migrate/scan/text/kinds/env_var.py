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

from migrate.core.findings import Finding
from migrate.core.kinds import rule_kind
from migrate.scan.tables.env_vars import (
    KIND,
    PARAMS,
    EnvEntry,
    EnvTable,
    compile_table,
    refs,
    tokens,
    verdict,
)
from migrate.scan.text.textfile import TextFile

_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
_ASSIGNED = re.compile(r"[ \t]*[=:][ \t]*[\"']?([0-9][0-9, \t]*[0-9])")


@rule_kind(KIND, engine="text", params=PARAMS, tokens=tokens, compile=compile_table, refs=refs)
def scan_env_vars(tf: TextFile, table: EnvTable) -> list[Finding]:
    cache: dict[str, EnvEntry | None] = {}
    findings: list[Finding] = []
    for m in _NAME.finditer(tf.masked):
        name = m.group()
        if name not in cache:
            cache[name] = table.lookup(name)
        entry = cache[name]
        if entry is None:
            continue
        assigned = _ASSIGNED.match(tf.masked, m.end())
        replacement, note = verdict(entry, name, assigned.group(1) if assigned else None)
        values = {"name": name, "target": replacement or "", "note": note}
        f = tf.finding(entry[0], m.start(), m.end(), values, replacement)
        if f is not None:
            findings.append(f)
    return findings
