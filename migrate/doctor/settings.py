"""The runtime-settings table (``data/runtime_settings.yaml``): environment variables that
change how fast a torch_npu program runs, the value that slows it, the fix and its source.

`migrate perf` judges a profile's recorded environment with it (PERF401); each row is
checked when the table loads, as the doctor's other tables are (migrate/doctor/tables.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from migrate.doctor.tables import DoctorDataError, Source, _open, _row, _source, _unused

__all__ = ["Setting", "runtime_settings"]

NAME = "runtime_settings.yaml"
CONDITIONS = {"set": bool, "unset": bool, "equals": str, "below": int, "unset_too": bool, "lacks": str}


@dataclass(frozen=True)
class Setting:
    variable: str
    slow_when: Mapping[str, Any]
    fix: str
    why: str
    source: Source
    observed: str | None = None  # what the profile shows instead of a recorded value

    def slows(self, value: str | None) -> bool:
        """Whether ``value`` (None: not set) is the slow one."""
        when = self.slow_when
        if value is None or value == "":
            return bool(when.get("unset") or when.get("unset_too"))
        if when.get("set"):
            return True
        if "equals" in when:
            return value.strip() == when["equals"]
        if "below" in when:
            try:
                return int(value.strip()) < when["below"]
            except ValueError:
                return False
        if "lacks" in when:
            return when["lacks"] not in value
        return False


@cache
def runtime_settings(folder: Path | None = None) -> tuple[Setting, ...]:
    data, sources, used = _open(NAME, folder)
    rows = data.get("settings")
    if not isinstance(rows, list) or not rows:
        raise DoctorDataError(f"{NAME}: no settings")
    out = []
    for i, raw in enumerate(rows):
        where = f"{NAME}: settings[{i}]"
        row = _row(
            raw,
            where,
            {"variable": str, "slow_when": dict, "fix": str, "why": str, "source": str},
            {"observed": str},
        )
        when = _row(row["slow_when"], f"{where}.slow_when", {}, CONDITIONS)
        if not {"set", "unset", "equals", "below", "lacks"} & set(when):
            raise DoctorDataError(f"{where}.slow_when: give set, unset, equals, below or lacks")
        if row.get("observed") not in (None, "task_queue"):
            raise DoctorDataError(f"{where}: observed must be task_queue")
        used.add(row["source"])
        out.append(
            Setting(
                row["variable"],
                when,
                row["fix"],
                row["why"],
                _source(sources, row["source"], where),
                row.get("observed"),
            )
        )
    _unused(sources, used, NAME)
    return tuple(out)
