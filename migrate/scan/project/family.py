"""A package's family of device checks (migrate/scan/check_family.py): the module that
defines it, chosen from what each file says, with the packages that re-export it, and its
cache data (checked like any input when read back).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from migrate.scan.check_family import CheckFamily, anchor, is_family, npu_member, npu_name, reexports
from migrate.scan.project.packages import _relative_to

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)
_NAME = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
_RELATIVE_PATH = re.compile(r"(?:\w[\w.-]*/)*\w[\w.-]*\.py\Z", re.ASCII)


def choose_family(
    top: Path, found: list[tuple[str, tuple[str, ...]]], inits: dict[str, str]
) -> CheckFamily | None:
    """The package's family: of its modules (not tests) whose device-check functions make
    one, the one with the most members, then the shallowest; None where none does."""
    candidates = []
    for name, members in found:
        rel = _relative_to(Path(name), top)
        parts = Path(rel).with_suffix("").parts
        if not is_family(members) or any(p.startswith("test") for p in parts):
            continue
        module = ".".join([top.name, *parts]).removesuffix(".__init__")
        candidates.append((-len(members), module.count("."), module, rel, members))
    if not candidates:
        return None
    _, _, module, rel, members = min(candidates)
    name = npu_name(members)
    defined = npu_member(members) is not None
    first = anchor(members)
    exported = _exporters(module, name if defined else first, inits)
    return CheckFamily(module, f"{top.name}/{rel}", name, defined, first, exported)


def _exporters(module: str, name: str, inits: dict[str, str]) -> tuple[str, ...]:
    """The packages above ``module`` whose ``__init__.py`` imports ``name`` from it, or from
    a package below them that does (a top-level import, as the family rule finds it where it
    adds the NPU member beside: kinds/check_family.py), shallowest first."""
    parts = module.split(".")
    sources, found = {module}, []
    for i in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:i])
        text = inits.get(package, "")
        if name not in text:
            continue
        try:
            tree = ast.parse(text.removeprefix("\ufeff"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if reexports(tree, package, sources, name):
            sources.add(package)
            found.append(package)
    return tuple(reversed(found))


def family_data(family: CheckFamily | None) -> dict | None:
    if family is None:
        return None
    return {
        "module": family.module,
        "rel": family.rel,
        "name": family.name,
        "defined": family.defined,
        "anchor": family.anchor,
        "publics": list(family.publics),
    }


def family_from_data(data) -> CheckFamily | None | bool:
    """The family read back from the cache; False where the data has not its shape."""
    if data is None:
        return None
    if not isinstance(data, dict):
        return False
    module, rel, name, defined, first, publics = (
        data.get(k) for k in ("module", "rel", "name", "defined", "anchor", "publics")
    )
    if not (
        isinstance(module, str)
        and _DOTTED.match(module)
        and isinstance(rel, str)
        and _RELATIVE_PATH.match(rel)
        and ".." not in rel.split("/")
        and all(isinstance(n, str) and _NAME.match(n) for n in (name, first))
        and isinstance(defined, bool)
        and isinstance(publics, list)
        and all(isinstance(p, str) and _DOTTED.match(p) for p in publics)
    ):
        return False
    return CheckFamily(module, rel, str(name), defined, str(first), tuple(publics))
