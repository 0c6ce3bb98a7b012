"""Return codes as their headers define them (``data/return_codes.yaml``): every ACL code of
``acl_base_rt.h`` and ``rt_error_codes.h``, the GE codes of the aclError documentation, the
aclnn status codes, HCCL's ``HcclResult``.

Each row names its code, its symbolic name, its family and its source; a row's cause and fix
default to its family's (the aclError rules: 1xxxxx the caller, 2xxxxx resources, 5xxxxx
internal; aclnn 161xxx argument checks, 361xxx runtime calls, 561xxx internal). Checked at
load: six-digit codes that start with one of their family's prefixes, names of the header's
spelling (``ACL_ERROR_*``, ``ACLNN_*``, ``HCCL_E_*``), no code or name twice, every source
and family cited resolves and every source is cited. ``merge`` adds the rows to the error
table where ``errors.yaml`` has no hand-written row, and fails when a hand row names a code
differently from its header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from migrate.doctor.tables import (
    DoctorDataError,
    Explanation,
    Source,
    _read,
    _row,
    _source,
    _sources,
    _unused,
)

NAME = "return_codes.yaml"
_NAMES = {"acl": r"ACL_ERROR_[A-Z0-9_]+", "aclnn": r"ACLNN_ERR_[A-Z0-9_]+", "hccl": r"HCCL_E_[A-Z_]+"}
_OPTIONAL = {"cause": str, "fix": str}


@dataclass(frozen=True)
class Family:
    id: str
    component: str
    prefixes: tuple[str, ...]
    cause: str
    fix: str
    source: Source


@dataclass(frozen=True)
class ReturnCodes:
    rows: dict[str, Explanation]  # code (six digits) or HCCL name -> explanation
    families: tuple[Family, ...]
    hccl: dict[int, str]  # HcclResult value -> name

    def family_of(self, code: str) -> Family | None:
        """The family whose longest prefix starts ``code`` (``507999`` -> rt-internal)."""
        best = None
        for fam in self.families:
            for prefix in fam.prefixes:
                if code.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
                    best = (prefix, fam)
        return best[1] if best else None


def _families(raw: object, sources: dict[str, Source], used: set[str]) -> dict[str, Family]:
    out: dict[str, Family] = {}
    if not isinstance(raw, list) or not raw:
        raise DoctorDataError(f"{NAME}: families must be a non-empty list")
    for i, item in enumerate(raw):
        where = f"{NAME}: families[{i}]"
        row = _row(
            item,
            where,
            {"id": str, "component": str, "prefixes": list, "cause": str, "fix": str, "source": str},
        )
        if row["id"] in out:
            raise DoctorDataError(f"{where}: family {row['id']} listed twice")
        prefixes = tuple(str(p) for p in row["prefixes"])
        if any(not re.fullmatch(r"\d{1,5}", p) for p in prefixes):
            raise DoctorDataError(f"{where}: prefixes are leading digits of six-digit codes")
        used.add(row["source"])
        out[row["id"]] = Family(
            row["id"],
            row["component"],
            prefixes,
            row["cause"],
            row["fix"],
            _source(sources, row["source"], where),
        )
    return out


def _code_rows(
    section: str, data: dict, families: dict[str, Family], sources: dict[str, Source], used: set[str]
) -> dict[str, Explanation]:
    out: dict[str, Explanation] = {}
    names: set[str] = set()
    for i, item in enumerate(data.get(section) or ()):
        where = f"{NAME}: {section}[{i}]"
        row = _row(
            item,
            where,
            {"code": str, "name": str, "family": str, "meaning": str, "source": str},
            _OPTIONAL,
        )
        code, name = row["code"], row["name"]
        fam = families.get(row["family"])
        if fam is None:
            raise DoctorDataError(f"{where}: family {row['family']!r} is not in families")
        if not re.fullmatch(r"\d{6}", code) or not any(code.startswith(p) for p in fam.prefixes):
            raise DoctorDataError(f"{where}: {code!r} is not a six-digit code of family {fam.id}")
        if not re.fullmatch(_NAMES[section], name):
            raise DoctorDataError(f"{where}: {name!r} is not an {section} name")
        if code in out or name in names:
            raise DoctorDataError(f"{where}: {code} / {name} listed twice")
        names.add(name)
        used.add(row["source"])
        out[code] = Explanation(
            code,
            "acl",
            name,
            fam.component,
            row["meaning"],
            row.get("cause") or fam.cause,
            row.get("fix") or fam.fix,
            (_source(sources, row["source"], where), fam.source),
        )
    return out


def _hccl_rows(
    data: dict, families: dict[str, Family], sources: dict[str, Source], used: set[str]
) -> tuple[dict[str, Explanation], dict[int, str]]:
    fam = families.get("hccl")
    if fam is None:
        raise DoctorDataError(f"{NAME}: no hccl family")
    rows: dict[str, Explanation] = {}
    values: dict[int, str] = {}
    for i, item in enumerate(data.get("hccl") or ()):
        where = f"{NAME}: hccl[{i}]"
        row = _row(
            item,
            where,
            {"value": int, "name": str, "meaning": str, "source": str},
            {**_OPTIONAL, "seen": str},
        )
        name, value = row["name"], row["value"]
        if not re.fullmatch(_NAMES["hccl"], name) or value <= 0:
            raise DoctorDataError(f"{where}: {name!r} = {value} is not an HCCL error")
        if name in rows or value in values:
            raise DoctorDataError(f"{where}: {name} / {value} listed twice")
        cites = [_source(sources, row["source"], where)]
        used.add(row["source"])
        if row.get("seen"):
            cites.append(_source(sources, row["seen"], where))
            used.add(row["seen"])
        values[value] = name
        rows[name] = Explanation(
            name,
            "hccl",
            f"HcclResult {value}",
            fam.component,
            row["meaning"],
            row.get("cause") or fam.cause,
            row.get("fix") or fam.fix,
            tuple(cites),
        )
    return rows, values


@cache
def return_codes(folder: Path | None = None) -> ReturnCodes:
    data = _read(NAME, folder)
    unknown = set(data) - {"sources", "families", "acl", "aclnn", "hccl"}
    if unknown:
        raise DoctorDataError(f"{NAME}: unknown keys {sorted(unknown)}")
    sources = _sources(data, NAME)
    used: set[str] = set()
    families = _families(data.get("families"), sources, used)
    rows = _code_rows("acl", data, families, sources, used)
    for code, row in _code_rows("aclnn", data, families, sources, used).items():
        if code in rows:
            raise DoctorDataError(f"{NAME}: aclnn code {code} is also an ACL code")
        rows[code] = row
    hccl_rows, values = _hccl_rows(data, families, sources, used)
    rows.update(hccl_rows)
    _unused(sources, used, NAME)
    return ReturnCodes(rows, tuple(families.values()), values)


def merge(codes: dict[str, Explanation], folder: Path | None = None) -> ReturnCodes:
    """Add the header rows to ``codes`` (errors.yaml's rows) where it has none; a hand row
    must carry its header's name."""
    table = return_codes(folder if folder is not None and (folder / NAME).is_file() else None)
    for code, row in table.rows.items():
        hand = codes.get(code)
        if hand is None:
            codes[code] = row
        elif hand.title != row.title:
            raise DoctorDataError(
                f"errors.yaml: code {code} is named {hand.title}, its header ({NAME}) names it {row.title}"
            )
    return table
