"""The environment-variable table: one lookup, one verdict, for Python and text files alike.

A rule row of kind ``env-var`` lists its variables as data::

    params:
      vars: {CUDA_VISIBLE_DEVICES: ASCEND_RT_VISIBLE_DEVICES, NCCL_DEBUG: null}
      notes: {CUDA_VISIBLE_DEVICES: "list devices in ascending order ..."}
      prefixes: {NCCL_: "no HCCL counterpart ..."}   # catch-all for names not listed
      ignore: [NCCL_VERSION]                          # names the prefixes must not catch
      ascending: [CUDA_VISIBLE_DEVICES]   # a literal id list assigned must be ascending,
                                          # else the finding has no fix and says why

Names listed in ``vars`` of any env-var rule win over every prefix, so one variable is
reported once. :func:`verdict` turns a name (and the value assigned to it, where the file
shows one) into the replacement and note that both engines report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from migrate.core.kinds import Token, param
from migrate.core.rules import Rule
from migrate.core.schema import NONE, mapping, strings

KIND = "env-var"
PARAMS = {
    "vars": mapping(param(str, NONE), doc="variable -> replacement (null: none)"),
    "notes": mapping(param(str), doc="variable -> note shown in the message"),
    "prefixes": mapping(param(str), doc="prefix -> note, for names not listed in vars"),
    "ignore": strings(doc="names the prefixes must not catch"),
    "ascending": strings(doc="variables whose literal id list must be ascending"),
}


def refs(rule: Rule) -> str | None:
    """Notes and ascending lists name variables the row lists."""
    p = rule.params
    listed = set(p.get("vars") or {})
    for key in p.get("notes") or {}:
        if key not in listed and key not in (p.get("prefixes") or {}):
            return f"params key 'notes' [{key!r}]: the row lists no variable {key!r}"
    for key in p.get("ascending") or ():
        if key not in listed:
            return f"params key 'ascending': the row lists no variable {key!r}"
    return None


EnvEntry = tuple[Rule, "str | None", str]


def tokens(rule: Rule, rules) -> set[Token]:
    """A row's prefilter tokens: its variable names and prefixes (both engines)."""
    p = rule.params
    return {Token(str(n)) for n in [*(p.get("vars") or {}), *(p.get("prefixes") or {})]}


@dataclass(frozen=True)
class EnvTable:
    """The selected env-var rows of a run, compiled once (the kind's ``compile`` hook)."""

    table: dict[str, EnvEntry]
    wanted: frozenset[str]  # codes of the selected rows: a name another row owns is theirs

    def lookup(self, name: str) -> EnvEntry | None:
        entry = lookup_env_var(name, self.table)
        return entry if entry is not None and entry[0].code in self.wanted else None


def compile_table(rules: Sequence[Rule]) -> EnvTable:
    return EnvTable(table_for(rules), frozenset(r.code for r in rules))


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


def table_for(rules: Sequence[Rule]) -> dict[str, EnvEntry]:
    """The lookup table for a scan: the shipped rows plus the selected ones, so a name listed
    by a rule that was not selected (``--ignore MIG701``) is not caught by another rule's
    prefix instead."""
    return {**_shipped_table(), **env_var_table(rules)}


_IDS = re.compile(r"[ \t]*([0-9]+(?:[ \t]*,[ \t]*[0-9]+)+)[ \t]*")


def verdict(entry: EnvEntry, name: str, value: str | None) -> tuple[str | None, str]:
    """(replacement or None, note) for ``name`` with ``value`` assigned to it (None: the file
    assigns none, or not literally). A device list that is not ascending gets no fix."""
    rule, replacement, note = entry
    if value is not None and name in (rule.params.get("ascending") or ()):
        m = _IDS.fullmatch(value)
        if m:
            ids = [int(x) for x in m.group(1).split(",")]
            if not all(a < b for a, b in zip(ids, ids[1:], strict=False)):
                note = (
                    f"{note} This value ({m.group(1)}) is not ascending: sort it (device ids"
                    " map to ranks differently then) before renaming."
                ).strip()
                replacement = None
    return replacement, note


@cache
def _shipped_table() -> dict[str, EnvEntry]:
    from migrate.core.rules import default_rules

    try:
        return env_var_table(default_rules())
    except (OSError, ValueError):  # no shipped rules (e.g. a bare test folder)
        return {}
