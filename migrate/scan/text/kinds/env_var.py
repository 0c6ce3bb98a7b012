"""Rule kind ``env-var``: CUDA/NCCL environment variables in scripts, images and configs.

A rule row lists its variables as data::

    params:
      vars: {CUDA_VISIBLE_DEVICES: ASCEND_RT_VISIBLE_DEVICES, NCCL_DEBUG: null}
      notes: {CUDA_VISIBLE_DEVICES: "list devices in ascending order ..."}
      prefixes: {NCCL_: "no HCCL counterpart ..."}   # catch-all for names not listed
      ignore: [NCCL_VERSION]                          # names the prefixes must not catch
      ascending: [CUDA_VISIBLE_DEVICES]   # a literal id list assigned must be ascending,
                                          # else the finding has no fix and says why

The message and fix title may use ``{name}``, ``{target}`` (the replacement) and ``{note}``,
as the Python engine's env-var kind does. A name is
matched as a whole word (``MY_CUDA_VISIBLE_DEVICES_BACKUP`` is not ``CUDA_VISIBLE_DEVICES``)
anywhere outside comments: ``export X=``, ``X=... cmd``, ``$X``, ``${X}``, ``ENV X``, YAML
keys and ``- X=1`` list items. Names listed in ``vars`` of any env-var rule win over every
prefix, so one variable is reported once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.scan.text.textfile import TextFile, applies

KIND = "env-var"
_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")

EnvEntry = tuple[Rule, "str | None", str]


def env_var_table(rules: Sequence[Rule]) -> dict[str, EnvEntry]:
    """name -> (rule, replacement or None, note), for every env-var rule.

    Prefix catch-alls appear with a trailing ``*`` (``"NCCL_*"``); use
    ``lookup_env_var`` to resolve a concrete name against exact names first.
    """
    table: dict[str, EnvEntry] = {}
    for rule in rules:
        if rule.kind != KIND:
            continue
        params = rule.params
        notes = params.get("notes") or {}
        for name, replacement in (params.get("vars") or {}).items():
            table[str(name)] = (rule, replacement, str(notes.get(name, "")))
        prefixes = params.get("prefixes") or {}
        for prefix, note in prefixes.items():
            table[f"{prefix}*"] = (rule, None, str(note or ""))
    return table


def lookup_env_var(name: str, table: dict[str, EnvEntry]) -> EnvEntry | None:
    """The entry for ``name``: an exact row, else the longest matching prefix row."""
    entry = table.get(name)
    if entry is not None:
        return entry
    best: tuple[int, EnvEntry] | None = None
    for key, value in table.items():
        if key.endswith("*") and name.startswith(key[:-1]) and len(name) > len(key) - 1:
            if name in (value[0].params.get("ignore") or ()):
                continue
            if best is None or len(key) > best[0]:
                best = (len(key), value)
    return best[1] if best else None


def scan_env_vars(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    """Findings of the env-var ``rules`` that apply to this file kind.

    The lookup table also holds the shipped env-var rules, so a name listed by a rule that
    was not selected (``--ignore MIG701``) is not caught by another rule's prefix instead.
    """
    wanted = {r.code for r in rules if r.kind == KIND and applies(r, tf.kind)}
    if not wanted:
        return []
    table = {**_shipped_table(), **env_var_table(rules)}
    cache: dict[str, EnvEntry | None] = {}
    findings: list[Finding] = []
    for m in _NAME.finditer(tf.masked):
        name = m.group()
        if name not in cache:
            cache[name] = lookup_env_var(name, table)
        entry = cache[name]
        if entry is None or entry[0].code not in wanted:
            continue
        rule, replacement, note = entry
        disorder = _unordered_ids(tf.masked, m.end()) if name in _ascending(rule) else None
        if disorder:
            note = (f"{note} This value ({disorder}) is not ascending: sort it (device ids map"
                    " to ranks differently then) before renaming.").strip()
            replacement = None
        values = {"name": name, "target": replacement or "", "note": note}
        f = tf.finding(rule, m.start(), m.end(), values, replacement)
        if f is not None:
            findings.append(f)
    return findings


_ASSIGNED_IDS = re.compile(r"[ \t]*[=:][ \t]*[\"']?([0-9]+(?:[ \t]*,[ \t]*[0-9]+)+)")


def _ascending(rule: Rule) -> tuple[str, ...]:
    return tuple(rule.params.get("ascending") or ())


def _unordered_ids(text: str, pos: int) -> str | None:
    """The literal id list assigned right after ``pos`` if it is not strictly ascending."""
    m = _ASSIGNED_IDS.match(text, pos)
    if not m:
        return None
    ids = [int(x) for x in m.group(1).split(",")]
    return None if all(a < b for a, b in zip(ids, ids[1:], strict=False)) else m.group(1)


@cache
def _shipped_table() -> dict[str, EnvEntry]:
    from migrate.core.rules import default_rules

    try:
        return env_var_table(default_rules())
    except (OSError, ValueError):  # no shipped rules (e.g. a bare test folder)
        return {}
