"""Align the records of two dumps by (name, call, kind, index), with optional renames.

A mapping file renames modules of the reference into names of the target, by prefix:

    modules:
      encoder.layer: model.layers     # reference prefix: target prefix
"""

from __future__ import annotations

from pathlib import Path

import yaml

from migrate.core.errors import UsageError


def load_mapping(path: str | Path | None) -> list[tuple[str, str]]:
    if path is None:
        return []
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read mapping file: {exc}") from None
    modules = doc.get("modules") if isinstance(doc, dict) else None
    if not isinstance(modules, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in modules.items()):
        raise UsageError(f"{path}: mapping file needs 'modules: {{ref_name: target_name}}'")
    return sorted(modules.items(), key=lambda kv: -len(kv[0]))


def rename(name: str, mapping: list[tuple[str, str]]) -> str:
    for ref_prefix, tgt_prefix in mapping:
        if name == ref_prefix:
            return tgt_prefix
        if name.startswith(ref_prefix + "."):
            return tgt_prefix + name[len(ref_prefix):]
    return name


def key(rec: dict, name: str | None = None) -> tuple:
    return (name if name is not None else rec["name"], rec["call"], rec["kind"], rec["index"])


def align(ref_records: list[dict], tgt_records: list[dict],
          mapping: list[tuple[str, str]]) -> tuple[list[tuple[dict, dict | None]], list[dict]]:
    """``(pairs, extra)``: pairs in reference execution order (target None when missing),
    extra = target records that no reference record matched."""
    tgt_by_key = {key(r): r for r in tgt_records}
    pairs = []
    used = set()
    for rec in ref_records:
        k = key(rec, rename(rec["name"], mapping))
        other = tgt_by_key.get(k)
        if other is not None:
            used.add(k)
        pairs.append((rec, other))
    extra = [r for r in tgt_records if key(r) not in used]
    return pairs, extra
