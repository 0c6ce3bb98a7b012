"""Align the records of two dumps by (name, call, kind, index), with renames.

A mapping file (``--mapping map.yaml``) renames modules of the reference into names of the
target, by prefix, and maps fused modules onto split ones (either side may be the list):

    modules:
      encoder.layer: model.layers     # reference prefix: target prefix
    fused:
      - reference: "h.*.attn.c_attn"                        # one fused q|k|v projection
        target: ["h.*.attn.q", "h.*.attn.k", "h.*.attn.v"]  # compared with their concat
        dim: -1

A target wrapped by DDP / FSDP / torch.compile (every name under ``module.``,
``_orig_mod.`` or ``_fsdp_wrapped_module.``) is unwrapped without a mapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import load_yaml

WRAPPERS = ("module.", "_orig_mod.", "_fsdp_wrapped_module.")


@dataclass
class Fused:
    reference: list[str]
    target: list[str]
    dim: int = -1


@dataclass
class Mapping:
    prefixes: list[tuple[str, str]]
    fused: list[Fused]
    given: bool = False


@dataclass
class Concat:
    """Several records of one side compared, concatenated along ``dim``, with one record."""

    records: list[dict]
    dim: int

    def __getitem__(self, key: str) -> Any:
        first = self.records[0]
        if key == "shape":
            shape = list(first["shape"])
            if shape:
                shape[self.dim] = sum(r["shape"][self.dim] for r in self.records)
            return shape
        return first[key]

    def get(self, key: str, default: Any = None) -> Any:
        return default if key in ("tensor", "file", "stats") else self[key]


def _globs(where: str, value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) for v in items):
        raise UsageError(f"{where} must be a module glob or a list of them")
    return items


def load_mapping(path: str | Path | None) -> Mapping:
    if path is None:
        return Mapping([], [])
    doc = load_yaml(path, "--mapping") or {}
    path = escape(str(path))
    if not isinstance(doc, dict) or set(doc) - {"modules", "fused"}:
        extra = (
            sorted(map(str, set(doc) - {"modules", "fused"})) if isinstance(doc, dict) else type(doc).__name__
        )
        raise UsageError(f"{path}: mapping file takes 'modules' and 'fused', got {escape(str(extra))[:120]}")
    modules = doc.get("modules") or {}
    if not isinstance(modules, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in modules.items()
    ):
        raise UsageError(f"{path}: mapping file needs 'modules: {{ref_name: target_name}}'")
    fused = []
    if not isinstance(doc.get("fused") or [], list):
        raise UsageError(f"{path}: 'fused' must be a list")
    for i, row in enumerate(doc.get("fused") or []):
        if not isinstance(row, dict) or set(row) - {"reference", "target", "dim"}:
            raise UsageError(f"{path}: fused[{i}] takes reference, target and dim")
        ref, tgt = (_globs(f"{path}: fused[{i}].{k}", row.get(k)) for k in ("reference", "target"))
        if (len(ref) > 1) == (len(tgt) > 1):
            raise UsageError(f"{path}: fused[{i}]: one side must be a single module")
        dim = row.get("dim", -1)
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise UsageError(f"{path}: fused[{i}].dim must be an integer")
        fused.append(Fused(ref, tgt, dim))
    return Mapping(sorted(modules.items(), key=lambda kv: -len(kv[0])), fused, given=True)


def rename(name: str, mapping: Mapping | list) -> str:
    prefixes = mapping.prefixes if isinstance(mapping, Mapping) else mapping
    for ref_prefix, tgt_prefix in prefixes:
        if name == ref_prefix:
            return tgt_prefix
        if name.startswith(ref_prefix + "."):
            return tgt_prefix + name[len(ref_prefix) :]
    return name


def unwrap(names: list[str], other: list[str]) -> str:
    """The wrapper prefix every name in ``names`` (but not in ``other``) starts with."""
    real = [n for n in names if n != "<root>" and "/" not in n]
    for prefix in WRAPPERS:
        if (
            real
            and all(n.startswith(prefix) or n == prefix[:-1] for n in real)
            and not any(n.startswith(prefix) for n in other)
        ):
            return prefix
    return ""


def strip(name: str, prefix: str) -> str:
    if prefix and name.startswith(prefix):
        return name[len(prefix) :]
    if prefix and name == prefix[:-1]:
        return "<root>"
    return name


def key(rec: dict, name: str | None = None) -> tuple:
    return (name if name is not None else rec["name"], rec["call"], rec["kind"], rec["index"])


def _glob_re(glob: str) -> re.Pattern:
    return re.compile("^" + re.escape(glob).replace(r"\*", "([^.]+)") + "$")


def _fused_pairs(fused: list[Fused], ref_by: dict, tgt_by: dict, used_r: set, used_t: set):
    pairs = []
    for rule in fused:
        one_side, many_side = (
            (rule.reference, rule.target) if len(rule.reference) == 1 else (rule.target, rule.reference)
        )
        one_by, many_by = (ref_by, tgt_by) if one_side is rule.reference else (tgt_by, ref_by)
        pat = _glob_re(one_side[0])
        for k, rec in list(one_by.items()):
            m = pat.match(k[0])
            if not m:
                continue
            names = [_fill(g, m.groups()) for g in many_side]
            found = [many_by.get((n, *k[1:])) for n in names]
            parts = [p for p in found if p is not None]
            if len(parts) < len(found):
                continue
            cat = Concat(parts, rule.dim)
            ref, other = (rec, cat) if one_by is ref_by else (cat, rec)
            pairs.append((ref, other))
            (used_r if one_by is ref_by else used_t).add(k)
            (used_t if one_by is ref_by else used_r).update((n, *k[1:]) for n in names)
    return pairs


def _fill(glob: str, groups: tuple) -> str:
    out = glob
    for g in groups:
        out = out.replace("*", g, 1)
    return out


def align(
    ref_records: list[dict], tgt_records: list[dict], mapping: Mapping | list, tgt_prefix: str = ""
) -> tuple[list[tuple[Any, Any]], list[dict]]:
    """``(pairs, extra)``: pairs in reference execution order (target None when missing),
    extra = target records that no reference record matched."""
    mapping = mapping if isinstance(mapping, Mapping) else Mapping(mapping, [])
    tgt_by = {key(r, strip(r["name"], tgt_prefix)): r for r in tgt_records}
    ref_by = {key(r, rename(r["name"], mapping)): r for r in ref_records}
    used_r: set = set()
    used_t: set = set()
    fused = {
        id(p[0]) if isinstance(p[0], dict) else id(p[0].records[0]): p
        for p in _fused_pairs(mapping.fused, ref_by, tgt_by, used_r, used_t)
    }
    pairs = []
    for rec in ref_records:
        k = key(rec, rename(rec["name"], mapping))
        if id(rec) in fused:
            pairs.append(fused[id(rec)])
            continue
        if k in used_r:
            continue
        other = tgt_by.get(k)
        if other is not None:
            used_t.add(k)
        pairs.append((rec, other))
    extra = [r for r in tgt_records if key(r, strip(r["name"], tgt_prefix)) not in used_t]
    return pairs, extra
