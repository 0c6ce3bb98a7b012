"""What each file of a package says (``file_facts``) and the package's facts from them
(``Facts``: helpers, NPU arms, imports, import style, modules run by path), with their
cache data (``_facts_data`` / ``_facts_from_data``: what was cached is checked like any input).
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from migrate.core import device_helpers
from migrate.scan.accelerator_apis import (
    api_of,
    defines_getter,
    getter_returns,
    imports_getter,
    mirror_classes,
)
from migrate.scan.check_family import CheckFamily, family_members
from migrate.scan.helper_finder import find_helpers, wrapped
from migrate.scan.parallel import map_in_workers
from migrate.scan.project.family import choose_family, family_data, family_from_data
from migrate.scan.project.file_devices import HelperRef
from migrate.scan.project.helpers import (
    _candidate,
    _choose,
    _may_define_helper,
    _names_in,
    _npu_arm_names,
    _public,
    _torch_local,
)
from migrate.scan.project.library_imports import (
    Ranked,
    imported_checks,
    ranked,
    ranked_data,
    ranked_from_data,
)
from migrate.scan.project.packages import _relative_to, _top_path
from migrate.scan.project.reading import _bytes_of

# a line's first word, found from the newline before it (a literal the regex engine skips
# to: twice as fast as ^ under MULTILINE on a large tree)
_IMPORT_TOP = re.compile(r"\n[ \t]*(?:from|import)[ \t]+(\.|[A-Za-z_]\w*)")


def imported_tops(data: bytes | None) -> set[str]:
    """The top-level packages a file's bytes import (none for a file not read)."""
    return set(_import_heads(data.decode("utf-8", "replace"))) - {"."} if data else set()


def _import_heads(text: str) -> list[str]:
    """The first word of every import statement: a top-level name, or "." for a relative
    import (``from .x import y``, ``from .. import z``)."""
    return _IMPORT_TOP.findall("\n" + text)


# what a package's files say: its helpers (one per kind), its NPU arms, the packages it imports,
# whether it imports its own modules relatively (more relative imports than imports of the
# package by name: a tie, or neither, is absolute, as PEP 8 recommends), its modules run
# by path (PackageInfo.run_by_path), its family of device checks (scan/check_family.py), and
# the libraries' NPU checks its modules import (project/library_imports.py)
Facts = tuple[
    tuple[HelperRef, ...], frozenset[str], frozenset[str], bool, frozenset[str], CheckFamily | None, Ranked
]


@dataclass(frozen=True)
class _FileFacts:
    """What one file of a package says (small: it travels back from a worker process)."""

    uses: frozenset[str] = frozenset()
    arms: frozenset[str] = frozenset()
    helpers: tuple[HelperRef, ...] = ()
    init: tuple[str, str] | None = None  # (package module, text) of an __init__.py
    relative: int = 0  # its relative imports
    absolute: int = 0  # its imports of its own package by name
    alone: bool = False  # run by path: a `__main__` block, a sibling imported by bare name
    mirrors: frozenset[str] = frozenset()  # its classes with an accelerator's device_name method
    returns: frozenset[str] = frozenset()  # the classes its own accelerator getter returns
    family: tuple[str, ...] = ()  # its device-check functions (scan/check_family.py)
    checks: tuple[tuple[str, str], ...] = ()  # the libraries' NPU checks it imports (module, name)


def file_facts(
    top: Path | str, name: str, configured: str | None, data: bytes | None = None
) -> _FileFacts | None:
    """What the package file ``name`` (a path under ``top``) says, from ``data`` when the
    caller has read its bytes (used only if discovery would read them: a regular file, not a
    symlink, of at most MAX_READ bytes); None for a file discovery does not read."""
    top = _top_path(os.fspath(top))
    data = _bytes_of(name, data)
    if data is None:
        return None
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")  # a BOM starts no line
    init = None
    if os.path.basename(name) == "__init__.py":
        init = (".".join([top.name, *Path(name).parent.relative_to(top).parts]), text)
    heads = _import_heads(text)
    uses = frozenset(heads) - {"."}
    facts = functools.partial(
        _FileFacts,
        relative=heads.count("."),
        absolute=heads.count(top.name),
        alone=_runs_alone(name, text, uses - {top.name}),
        family=family_members(text) if "_available" in text else (),
        checks=imported_checks(text),
    )
    if not _candidate(data):
        return facts(uses, init=init)
    arms = frozenset(_npu_arm_names(text))
    parts = Path(name).relative_to(top).with_suffix("").parts
    module = ".".join([top.name, *parts]).removesuffix(".__init__")
    accel = _accelerator(text, module)
    own = [h.name for h in accel if h.module == module]
    returns = getter_returns(text, own[0]) if own else frozenset()
    facts = functools.partial(facts, mirrors=mirror_classes(text), returns=returns)
    if not _may_define_helper(data):
        return facts(uses, arms, accel, init=init)
    if configured and module != configured:
        return facts(uses, arms, accel, init=init)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return facts(uses, arms, accel, init=init)
    found = find_helpers(tree, _torch_local(tree)).values()
    helpers = tuple(HelperRef(h.kind, module, h.name, h.call, h.ours) for h in found)
    return facts(uses, arms, accel + helpers, init)


def _accelerator(text: str, module: str) -> tuple[HelperRef, ...]:
    """The accelerator API getter the file imports (rules/accelerator_apis.yaml), or defines
    as the package's own (kept where it returns an object whose class the package gives the
    object's methods: _accelerator_kept)."""
    if "accelerator" not in text:
        return ()
    imported = imports_getter(text)
    if imported is not None:
        return (HelperRef("accelerator", *imported),)
    own = defines_getter(text)
    return (HelperRef("accelerator", module, own),) if own else ()


_MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]""", re.MULTILINE)


def _runs_alone(name: str, text: str, heads: frozenset[str]) -> bool:
    """A package module that is also run by path: it has a ``__main__`` block and imports a
    module beside it by bare name (``import utils`` with utils.py in its folder), which
    works only when its folder is the script's (pytorch/examples fast_neural_style)."""
    if not _MAIN_GUARD.search(text):
        return False
    folder = os.path.dirname(name)
    return any(
        os.path.isfile(os.path.join(folder, head + ".py")) or os.path.isdir(os.path.join(folder, head))
        for head in heads
    )


def _package_facts(
    top: Path, files: list[str], configured: str | None, jobs: int | None = None, read: list | None = None
) -> Facts:
    """The package's facts from its files (``read``: each file's facts, read by the caller),
    read in worker processes when there are many."""
    if read is None or len(read) != len(files):
        read = map_in_workers(functools.partial(file_facts, top, configured=configured), files, jobs)
    alone = frozenset(
        _relative_to(Path(name), top)
        for name, f in zip(files, read, strict=True)
        if f is not None and f.alone
    )
    per_file = [f for f in read if f is not None]
    mirrors = frozenset().union(*(f.mirrors for f in per_file))
    found = [
        h
        for f in per_file
        for h in f.helpers
        if h.kind != "accelerator" or _accelerator_kept(h, f.returns & mirrors)
    ]
    inits = dict(f.init for f in per_file if f.init is not None)

    def files_naming(words: tuple[str, ...]) -> dict[str, int]:
        counts = dict.fromkeys(words, 0)
        for named in map_in_workers(functools.partial(_names_in, words=words), files, jobs):
            for w in named:
                counts[w] += 1
        return counts

    helpers = tuple(_public(h, inits) for h in _choose(found, files_naming))
    arms = frozenset().union(*(f.arms for f in per_file))
    uses = frozenset().union(*(f.uses for f in per_file))
    relative = sum(f.relative for f in per_file) > sum(f.absolute for f in per_file)
    families = [(name, f.family) for name, f in zip(files, read, strict=True) if f is not None and f.family]
    family = choose_family(top, families, inits)
    checks = ranked([f.checks for f in per_file], top.name)
    return helpers, arms, uses - {top.name}, relative, alone, family, checks


def _accelerator_kept(ref: HelperRef, mirrors: frozenset[str]) -> bool:
    """A library's getter, or the package's own where it returns an object that mirrors
    torch.cuda (``mirrors``: the classes it returns that define the object's
    ``device_name``); a function of that name returning anything else (huggingface
    accelerate's ``Accelerator``) is not a device helper."""
    api = api_of(ref.module, ref.name)
    return api is not None and (ref.module in api.modules or bool(mirrors))


def _facts_data(facts: Facts) -> dict:
    helpers, arms, uses, relative, alone, family, checks = facts
    data = {
        "helpers": [
            {
                "kind": h.kind,
                "module": h.module,
                "name": h.name,
                "call": h.call,
                "ours": h.ours,
                "publics": list(h.publics),
            }
            for h in helpers
        ],
        "npu_arms": sorted(arms),
        "uses": sorted(uses),
        "relative_imports": relative,
        "run_by_path": sorted(alone),
        "family": family_data(family),
        "checks": ranked_data(checks),  # always written: a cache without it is an older one
    }
    return data


# the kinds a cached helper may have, besides a call wrapper's (helper_finder.wrapped)
_HELPER_KINDS = frozenset(device_helpers.NAMES) | {"accelerator"}


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)


_NAME = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)


_RELATIVE_PATH = re.compile(r"(?:\w[\w.-]*/)*\w[\w.-]*\.py\Z", re.ASCII)


def _facts_from_data(data: dict | None) -> Facts | None:
    """Facts read back from the cache, or None unless every field has its shape: what was
    cached is data, checked like any other input."""
    if data is None:
        return None
    try:
        helpers = []
        for h in data["helpers"]:
            kind, module, name, call, ours, publics = (
                h["kind"],
                h["module"],
                h["name"],
                h["call"],
                h["ours"],
                h["publics"],
            )
            if not (
                isinstance(kind, str)
                and (kind in _HELPER_KINDS or wrapped(kind) is not None)
                and isinstance(module, str)
                and _DOTTED.match(module)
                and isinstance(name, str)
                and _NAME.match(name)
                and isinstance(call, bool)
                and isinstance(ours, bool)
                and isinstance(publics, list)
                and all(isinstance(p, str) and _DOTTED.match(p) for p in publics)
            ):
                return None
            helpers.append(HelperRef(kind, module, name, call, ours, tuple(publics)))
        arms, uses = data["npu_arms"], data["uses"]
        if not isinstance(arms, list) or not isinstance(uses, list) or not isinstance(data["helpers"], list):
            return None
        if not all(isinstance(n, str) and _NAME.match(n) for n in (*arms, *uses)):
            return None
        relative, alone = data["relative_imports"], data["run_by_path"]
        if not isinstance(relative, bool) or not isinstance(alone, list):
            return None
        if not all(isinstance(p, str) and _RELATIVE_PATH.match(p) for p in alone):
            return None
        family = family_from_data(data.get("family"))
        if family is False or family is True:
            return None
        checks = ranked_from_data(data["checks"])
        if checks is None:
            return None
        return tuple(helpers), frozenset(arms), frozenset(uses), relative, frozenset(alone), family, checks
    except (KeyError, TypeError):
        return None


def script_imports(name: str, data: bytes | None = None) -> set[str]:
    """The packages a script outside any package imports (``data``: its bytes, as for
    ``file_facts``)."""
    return imported_tops(_bytes_of(name, data))
