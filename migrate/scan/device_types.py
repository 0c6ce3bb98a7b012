"""torch.device types and other vendors' words (rules/device_types.yaml).

The device types tell a device-type helper from other code (migrate/scan/helper_finder.py);
the device types that are another vendor's, with the vendor words (``intel``, ``rocm``,
``tpu``, ``habana`` ...), tell a chain test that asks for another vendor
(migrate/scan/python/npu_work_arm.py). The table is data with a typed schema, checked when
it loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import yaml

from migrate.core.errors import RuleError
from migrate.core.resources import rules_dir
from migrate.core.schema import problems, strings

_WORD = re.compile(r"[a-z][a-z0-9_]*\Z")


def _word(value) -> str | None:
    return None if isinstance(value, str) and _WORD.match(value) else f"not a lower-case word: {value!r}"


_SCHEMA = {
    "device_types": strings("torch.device types", required=True, check=_word),
    "not_vendors": strings("device types that name no other vendor", required=True, check=_word),
    "vendor_words": strings("other words naming another vendor", required=True, check=_word),
}


@dataclass(frozen=True)
class DeviceTypes:
    types: frozenset[str]
    vendors: tuple[str, ...]  # other vendors' device types and words, sorted


@cache
def device_types(path: str | None = None) -> DeviceTypes:
    """The table (``path``: another file, for tests); RuleError where it breaks the schema."""
    file = rules_dir() / "device_types.yaml" if path is None else path
    data = yaml.safe_load(open(file, encoding="utf-8").read()) or {}
    if not isinstance(data, dict):
        raise RuleError(f"{file}: must be a mapping")
    why = problems(_SCHEMA, data, "", what="key")
    if why is not None:
        raise RuleError(f"{file}: {why}")
    types = frozenset(data["device_types"])
    stray = sorted(set(data["not_vendors"]) - types)
    if stray:
        raise RuleError(f"{file}: not_vendors: not a device type: {', '.join(stray)}")
    vendors = (types - set(data["not_vendors"])) | set(data["vendor_words"])
    return DeviceTypes(types, tuple(sorted(vendors)))


DEVICE_TYPES = device_types().types
