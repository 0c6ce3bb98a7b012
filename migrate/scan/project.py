"""What a portable port needs to know about the project around a file, found once per scan.

* **Device helpers** — per top-level package, the functions the project already uses to name
  its device (migrate/scan/helper_finder.py decides from the code what each one is),
  one per kind, the most imported one where there are several; a project may name the
  module with ``device-helper = "pkg.utils.device"`` in ``[tool.migrate]``.
* **Where the port's own helper goes** where the project has none: ``<package>/_device.py``
  (migrate/core/device_helpers), or, for a script outside any package, the file itself.
* **The declared minimum torch** (pyproject, setup.py, setup.cfg, requirements files next to
  the package or script, the lowest of the nearest folder that has any): forms a port writes
  must exist in it.
* **NPU arms** — names of classes and functions that name NPU (``NPU_Accelerator``): a CUDA
  class with an NPU sibling is one arm of a real dispatch and stays as written.

Reading is bounded: at most ``MAX_PACKAGE_FILES`` files of at most ``MAX_READ`` bytes per
package, regular files only; nothing read is executed. ``FileDevices`` (per file, frozen,
picklable) travels with each scan work item and is part of the cache key.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from migrate.core import device_helpers, reads
from migrate.core.display import shown_path
from migrate.core.fileio import SourceError, read_bytes
from migrate.scan.helper_finder import find_helpers
from migrate.scan.npu_names import may_name_npu, names_npu
from migrate.scan.parallel import map_in_workers
from migrate.scan.project_cache import FactsCache, signature

MAX_PACKAGE_FILES = 5000
MAX_READ = 1024 * 1024
# a file worth parsing for helpers names the NPU (migrate/scan/npu_names.py), the
# accelerator or a device module
_CANDIDATE_TOKENS = (b"accelerator", b"get_device_module", b"privateuse1")
_DEF_NAME = re.compile(r"^\s*(?:class|def)\s+(\w+)", re.MULTILINE)


def _candidate(data: bytes) -> bool:
    """Whether a file may define a device helper or an NPU arm: it names the NPU, the
    accelerator or a device module."""
    lowered = data.lower()
    if any(token in lowered for token in _CANDIDATE_TOKENS):
        return True
    # names_npu's own substring test, on the bytes already lowered: most files stop here
    return may_name_npu(lowered) and names_npu(data)


def _npu_arm_names(text: str) -> set[str]:
    """Names of the classes and functions ``text`` defines that name the NPU."""
    return {m.group(1) for m in _DEF_NAME.finditer(text) if names_npu(m.group(1))}


_TORCH_MIN = re.compile(r"""(?<![\w.-])torch\s*(?:\[[^\]]*\])?\s*(?:>=|~=|==|>)\s*(\d+)\.(\d+)""")
_DEP_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")


def _dep_files(folder: Path) -> list[Path]:
    """The dependency files of ``folder``: _DEP_FILES, requirements-*.txt / requirements_*.txt
    beside them and requirements/*.txt."""
    found = [folder / name for name in _DEP_FILES]
    try:
        found += sorted(p for p in folder.glob("requirements?*.txt") if p.name != "requirements.txt")
        found += sorted((folder / "requirements").glob("*.txt"))
    except OSError:
        pass
    return found


@dataclass(frozen=True)
class HelperRef:
    """A project helper: ``module.name`` answers ``kind`` (called, or read when a variable)."""

    kind: str
    module: str  # where it is defined
    name: str
    call: bool = True
    ours: bool = False
    publics: tuple[str, ...] = ()  # packages whose __init__ re-exports it, shallowest first

    def import_from(self, importer: str | None) -> str:
        """Where the module ``importer`` (None: a script) imports it from: the shallowest
        package that re-exports it and does not contain the importer (importing through an
        __init__ the importer belongs to can be circular), else the defining module."""
        for public in self.publics:
            if importer is None or not (importer == public or importer.startswith(public + ".")):
                return public
        return self.module

    @property
    def public(self) -> str:
        return self.publics[0] if self.publics else self.module

    def describe(self) -> str:
        return f"{self.public}.{self.name}{'()' if self.call else ''}"


@dataclass(frozen=True)
class FileDevices:
    """What a portable rewrite of one file may route through."""

    module: str | None = None  # the file's dotted module name; None: a script
    package: str | None = None  # its top-level package
    helpers: tuple[HelperRef, ...] = ()  # the project's, one per kind
    add_module: str | None = None  # where the port's own helper goes (None: in the file)
    add_path: str | None = None  # ... and its path relative to the scan root
    min_torch: tuple[int, int] | None = None
    npu_arms: frozenset[str] = frozenset()
    # the project's type helper the added module imports (module, name), if it has one
    type_from: tuple[str, str] | None = None
    # how its package imports its own modules: relatively (True) where most of its files
    # do, else absolutely (False); None outside a package (the file's own imports decide)
    relative_imports: bool | None = None
    # a script outside any package: whether another scanned file imports it by its name
    # (then it is a module, not a program: --target transfer); None: not known
    imported: bool | None = None

    def helper(self, kind: str) -> HelperRef | None:
        return next((h for h in self.helpers if h.kind == kind), None)

    def key(self) -> str:
        return repr(self)


SCRIPT = FileDevices()
# How rule examples are ported (`migrate rules`, tests/meta/test_rule_examples.py): as a
# module of a package ``pkg`` without helpers of its own.
EXAMPLE = FileDevices(
    module="pkg.example", package="pkg", add_module="pkg._device", add_path="pkg/_device.py"
)


@dataclass
class PackageInfo:
    path: Path  # the package folder
    name: str
    helpers: tuple[HelperRef, ...] = ()
    add_module: str | None = None
    add_path: str | None = None
    min_torch: tuple[int, int] | None = None
    npu_arms: frozenset[str] = frozenset()
    type_from: tuple[str, str] | None = None  # see FileDevices
    uses: frozenset[str] = frozenset()  # top-level packages its modules import
    adopted: str | None = None  # the package whose helpers it uses (it has none)
    relative_imports: bool = False  # see FileDevices
    # its modules also run by path (a `__main__` block, siblings imported by bare name:
    # pytorch/examples fast_neural_style), as paths relative to the package folder
    run_by_path: frozenset[str] = frozenset()


@dataclass
class ProjectContext:
    """Per package found under the scanned files: its helpers and where ours would go."""

    root: Path
    packages: dict[str, PackageInfo] = field(default_factory=dict)  # by top folder
    scripts_min_torch: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    configured: str | None = None  # [tool.migrate] device-helper
    paths: dict[str, Path] = field(default_factory=dict)  # reported path -> path on disk
    scripts: dict[str, PackageInfo] = field(default_factory=dict)  # the package a script uses
    known: dict = field(default_factory=dict, repr=False)  # what each folder is (package_of)
    jobs: int | None = None  # worker processes for reading large packages
    # per package top: its files and their signature, listed once (Discovery), and the facts
    # of each of those files when the caller read them in its own pass
    listed: dict[str, tuple[list[str], str | None]] = field(default_factory=dict, repr=False)
    read: dict[str, list[_FileFacts | None]] = field(default_factory=dict, repr=False)
    # per script outside any package (its path as given): the packages it imports, when
    # the caller read it
    script_uses: dict[str, set[str]] = field(default_factory=dict, repr=False)
    # scripts outside any package (reported paths) that another scanned file imports by name
    imported_scripts: set[str] = field(default_factory=set)

    def package_of(self, path: Path) -> tuple[Path | None, str | None]:
        return package_of(path, self.known)

    def for_file(self, rel: str) -> FileDevices:
        path = self.paths.get(rel) or self.root / rel
        top, module = self.package_of(path)
        if top is None:
            donor = self.scripts.get(rel)
            floor = self.scripts_min_torch.get(str(path.parent))
            imported = rel in self.imported_scripts
            if donor is None:
                return FileDevices(min_torch=floor, imported=imported)
            return FileDevices(
                helpers=donor.helpers,
                add_module=donor.add_module,
                add_path=donor.add_path,
                min_torch=floor or donor.min_torch,
                npu_arms=donor.npu_arms,
                type_from=donor.type_from,
                imported=imported,
            )
        info = self.packages.get(str(top))
        if info is None:
            return FileDevices()
        if _relative_to(path, top) in info.run_by_path:
            # run by path, its package is not importable there: ported as a script is
            return FileDevices(min_torch=info.min_torch)
        return FileDevices(
            module=module,
            package=info.name,
            helpers=info.helpers,
            add_module=info.add_module,
            add_path=info.add_path,
            min_torch=info.min_torch,
            npu_arms=info.npu_arms,
            type_from=info.type_from,
            relative_imports=info.relative_imports,
        )

    def key(self) -> str:
        """Part of the scan cache key: portable fixes depend on it."""
        return (
            "devices="
            + ";".join(
                f"{k}:{p.helpers}:{p.add_module}:{p.min_torch}:{sorted(p.npu_arms)}:{p.type_from}"
                f":{p.relative_imports}:{sorted(p.run_by_path)}"
                for k, p in sorted(self.packages.items())
            )
            + f";{sorted(self.scripts_min_torch.items())};"
            + ";".join(f"{r}:{p.name}" for r, p in sorted(self.scripts.items()))
            + f";imported={sorted(self.imported_scripts)}"
        )

    def describe(self) -> list[tuple[str, str]]:
        """(package, what its portable rewrites route through), for the reports."""
        out = []
        for info in sorted(self.packages.values(), key=lambda p: p.name):
            chosen = [h.describe() for h in info.helpers]
            if chosen:
                via = f" (imports {info.adopted})" if info.adopted else ""
                out.append((info.name, ", ".join(chosen) + via))
            elif info.add_path:
                shown = shown_path(info.add_path, self.root)
                out.append((info.name, f"adds {shown} (get_device_type(), ...)"))
        for name in sorted({p.name for p in self.scripts.values()}):
            donor = next(p for p in self.scripts.values() if p.name == name)
            what = ", ".join(h.describe() for h in donor.helpers) or f"adds {donor.add_path}"
            out.append((f"scripts importing {name}", what))
        return out


def package_of(path: Path, known: dict | None = None) -> tuple[Path | None, str | None]:
    """(top package folder, dotted module name) of a Python file, or (None, None) for a
    file outside any package (no ``__init__.py`` beside it). ``known`` remembers what each
    folder is across the calls of one scan."""
    known = {} if known is None else known
    name = os.fspath(path)
    folder = os.path.dirname(name)
    if not _is_package(folder, known):
        return None, None
    chain = _chain(folder, known)
    stem = os.path.splitext(os.path.basename(name))[0]
    parts = (chain[1] if chain else ()) + (() if stem == "__init__" else (stem,))
    if not all(p.isidentifier() for p in parts):
        return None, None
    return _top_path(chain[0] if chain else folder), ".".join(parts)


def _is_package(folder: str, known: dict) -> bool:
    key = ("init", folder)
    found = known.get(key)
    if found is None:
        reads.folder(folder)
        found = known[key] = os.path.isfile(os.path.join(folder, "__init__.py"))
    return found


def _chain(folder: str, known: dict) -> tuple[str, tuple[str, ...]] | None:
    """(top folder, names from the top down) of the package folders from ``folder`` up,
    or None when ``folder`` does not start one (not a package, or a nameless folder).
    Iterative: a tree may be nested deeper than the recursion limit."""
    pending: list[tuple[str, str]] = []  # (folder, its name), innermost first
    found: tuple[str, tuple[str, ...]] | None = None
    while True:
        key = ("chain", folder)
        if key in known:
            found = known[key]
            break
        name, parent = os.path.basename(folder), os.path.dirname(folder)
        if name in ("", ".") or parent == folder or not _is_package(folder, known):
            known[key] = None
            break
        pending.append((folder, name))
        folder = parent
    for folder, name in reversed(pending):
        found = (found[0], (*found[1], name)) if found else (folder, (name,))
        known[("chain", folder)] = found
    return found


@functools.lru_cache(maxsize=256)
def _top_path(top: str) -> Path:
    return Path(top)


def discover(
    files: list[tuple[Path, str]],
    root: Path,
    configured: str | None = None,
    cache_dir: Path | None = None,
    jobs: int | None = None,
) -> ProjectContext:
    """The project context for the Python ``files`` ((path on disk, reported path) pairs).
    With ``cache_dir``, each package's facts are reused while its files are unchanged
    (migrate/scan/project_cache.py); a large package is read by ``jobs`` processes."""
    return Discovery(files, root, configured, cache_dir, jobs).finish()


class Discovery:
    """discover() in two steps, for a caller that reads the files in a pass of its own (the
    scan reads each file once, for this and for its prefilter: migrate/scan/worker.py):

    * ``Discovery(...).to_read``: package top -> the files whose facts are needed (the
      packages of the given files whose cached facts no longer hold), and ``scripts``: the
      files outside any package (their imports choose the package they take helpers from);
    * ``finish(read, script_uses)``: the context, from ``read`` (top -> ``file_facts`` of
      each of those files, in order) and ``script_uses`` (script path -> ``imported_tops``);
      what is not given (a package found later, as a donor) is read here."""

    def __init__(
        self,
        files: list[tuple[Path, str]],
        root: Path,
        configured: str | None = None,
        cache_dir: Path | None = None,
        jobs: int | None = None,
    ):
        self.files, self.root, self.configured = files, root, configured
        self.ctx = ProjectContext(root, configured=configured, jobs=jobs)
        self.cache = FactsCache.open(cache_dir, configured)
        self.to_read: dict[str, list[str]] = {}
        self.scripts: list[str] = []
        for path, _ in files:
            top, _ = self.ctx.package_of(path)
            if top is None:
                self.scripts.append(os.fspath(path))
            elif str(top) not in self.ctx.listed:
                listed, sig = _listed(top, self.ctx, self.cache)
                if _facts_from_data(self.cache.get(top, sig)) is None:
                    self.to_read[str(top)] = listed

    def finish(
        self,
        read: dict[str, list[_FileFacts | None]] | None = None,
        script_uses: dict[str, set[str]] | None = None,
    ) -> ProjectContext:
        self.ctx.read, self.ctx.script_uses = dict(read or {}), dict(script_uses or {})
        try:
            _discover(self.ctx, self.files, self.root, self.configured, self.cache)
        finally:
            self.cache.save()
            self.ctx.read, self.ctx.script_uses = {}, {}
        return self.ctx


def _listed(top: Path, ctx: ProjectContext, cache: FactsCache) -> tuple[list[str], str | None]:
    """The package's files and their signature (for the facts cache), listed once per scan."""
    key = str(top)
    if key not in ctx.listed:
        files = list(_package_files(top))
        ctx.listed[key] = (files, signature(files, top) if cache.path is not None else None)
    return ctx.listed[key]


def _discover(
    ctx: ProjectContext, files: list[tuple[Path, str]], root: Path, configured: str | None, facts: FactsCache
) -> None:
    scripts: list[tuple[Path, str]] = []
    for path, rel in files:
        ctx.paths[rel] = path
        top, _ = ctx.package_of(path)
        if top is None:
            key = str(path.parent)
            if key not in ctx.scripts_min_torch:
                ctx.scripts_min_torch[key] = declared_min_torch(path.parent, root)
            scripts.append((path, rel))
            continue
        if str(top) not in ctx.packages:
            ctx.packages[str(top)] = _package(top, ctx, facts)
    others: dict[str, PackageInfo | None] = {}
    for info in list(ctx.packages.values()):
        if not info.helpers:
            donor = _donor(info.uses, _ancestors(info.path.parent, root), root, ctx, others, facts)
            if donor is not None and not donor.helpers and _size(ctx, donor) < _size(ctx, info):
                donor = None  # torchchat importing its small `tokenizer`: the module goes in torchchat
            if donor is not None:
                info.helpers, info.adopted = donor.helpers, donor.name
                if donor.add_module:  # one helper module for the project, in the package used
                    info.add_module, info.add_path = donor.add_module, donor.add_path
                    info.type_from = donor.type_from
    imported = set().union(*(info.uses for info in ctx.packages.values()))
    for path, rel in scripts:
        uses = ctx.script_uses.get(os.fspath(path))
        if uses is None:
            uses = imported_tops(_read(path))
        imported |= uses - {path.stem}
        donor = _donor(uses, _ancestors(path.parent, root), root, ctx, others, facts)
        if donor is not None:
            ctx.scripts[rel] = donor
    ctx.imported_scripts = {rel for path, rel in scripts if path.stem in imported}


def _size(ctx: ProjectContext, info: PackageInfo) -> int:
    """How many Python files the package has (listed when its facts were read)."""
    listed = ctx.listed.get(str(info.path))
    return len(listed[0]) if listed else 0


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


def _ancestors(folder: Path, root: Path) -> list[Path]:
    """``folder`` and its parents up to the scan root (at most 6)."""
    out = [folder]
    stop = os.path.realpath(root)
    cur = folder
    for _ in range(6):
        if os.path.realpath(cur) == stop or cur.parent == cur:
            break
        cur = cur.parent
        out.append(cur)
    return out


def _donor(
    uses, folders: list[Path], root: Path, ctx: ProjectContext, others: dict, facts: FactsCache
) -> PackageInfo | None:
    """The package of the project that code importing ``uses`` takes its device helpers
    from: one it imports, found in one of ``folders`` (beside it, or a parent up to the scan
    root) or under its ``src/`` (``recipe/prime`` importing ``verl``, tests importing
    ``peft``); one with helpers of its own first."""
    found: list[PackageInfo] = []
    for folder in folders:
        base = os.fspath(folder)
        for name in sorted(uses):
            for key in (os.path.join(base, name), os.path.join(base, "src", name)):
                if not _is_package(key, ctx.known):
                    continue
                cand = Path(key)
                info = ctx.packages.get(key)
                if info is None:
                    if key not in others:
                        others[key] = _package(cand, ctx, facts)
                    info = others[key]
                if info is not None and not info.adopted:
                    found.append(info)
    own = [p for p in found if p.helpers and not all(h.ours for h in p.helpers)]
    chosen = own or [p for p in found if p.add_module]
    return chosen[0] if chosen else None


def _package(top: Path, ctx: ProjectContext, cache: FactsCache) -> PackageInfo:
    root, configured = ctx.root, ctx.configured
    info = PackageInfo(top, top.name, min_torch=declared_min_torch(top.parent, root))
    files, sig = _listed(top, ctx, cache)
    facts = _facts_from_data(cache.get(top, sig))
    if facts is None:
        facts = _package_facts(top, files, configured, ctx.jobs, ctx.read.get(str(top)))
        cache.put(top, sig, _facts_data(facts))
    info.helpers, info.npu_arms, info.uses, info.relative_imports, info.run_by_path = facts
    own = _own_module_path(top, configured)
    if own is not None:
        real = os.path.realpath(own[1])
        rel = os.path.relpath(real, os.path.realpath(root))
        # the port writes nothing outside the scanned tree or the current directory (a file
        # given on its own still gets its package's module, as a run over the package would)
        if not rel.startswith("..") or _under(real, os.getcwd()):
            info.add_module, info.add_path = own[0], Path(rel).as_posix()
    typed = next((h for h in info.helpers if h.kind == "type" and h.call and not h.ours), None)
    if typed is not None and info.add_module:  # the added module builds on the project's
        # from the module defining it, never through a package that re-exports it: files in
        # that package import the added module, and would run it while the package's
        # __init__ is half done (peft: peft/utils/__init__ -> integrations -> peft._device ->
        # `from peft.utils import infer_device`: ImportError, `import peft` failed)
        info.type_from = (typed.module, typed.name)
    return info


# what a package's files say: its helpers (one per kind), its NPU arms, the packages it imports,
# whether it imports its own modules relatively (more relative imports than imports of the
# package by name: a tie, or neither, is absolute, as PEP 8 recommends), and its modules run
# by path (PackageInfo.run_by_path)
Facts = tuple[tuple[HelperRef, ...], frozenset[str], frozenset[str], bool, frozenset[str]]


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
    text = data.decode("utf-8", "replace")
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
    )
    if not _candidate(data):
        return facts(uses, init=init)
    arms = frozenset(_npu_arm_names(text))
    if not _may_define_helper(data):
        return facts(uses, arms, init=init)
    parts = Path(name).relative_to(top).with_suffix("").parts
    module = ".".join([top.name, *parts]).removesuffix(".__init__")
    if configured and module != configured:
        return facts(uses, arms, init=init)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return facts(uses, arms, init=init)
    found = find_helpers(tree, _torch_local(tree)).values()
    helpers = tuple(HelperRef(h.kind, module, h.name, h.call, h.ours) for h in found)
    return facts(uses, arms, helpers, init)


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


def _relative_to(path: Path, top: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(top)).as_posix()
    except ValueError:
        return ""


def _names_in(name: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """The ``words`` the file ``name`` names (as whole words)."""
    data = _read(Path(name))
    if data is None:
        return ()
    text = data.decode("utf-8", "replace")
    return tuple(w for w in words if re.search(rf"\b{re.escape(w)}\b", text))


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
    found = [h for f in per_file for h in f.helpers]
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
    return helpers, arms, uses - {top.name}, relative, alone


# a top-level def and its parameters (to the first ")": a default holding a call ends the
# match early, and the function still counts as callable without arguments)
_TOP_DEF = re.compile(rb"^def[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)


def _may_define_helper(data: bytes) -> bool:
    """Whether a file may define a device helper: a top-level function callable without
    arguments (helper_finder takes no other), found without parsing the file."""
    for m in _TOP_DEF.finditer(data):
        params = [p.strip() for p in _COMMENT.sub(b"", m.group(1)).split(b",")]
        if all(not p or b"=" in p or p.startswith(b"*") or p == b"/" for p in params):
            return True
    return False


_COMMENT = re.compile(rb"#[^\n]*")


def _facts_data(facts: Facts) -> dict:
    helpers, arms, uses, relative, alone = facts
    return {
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
    }


_HELPER_KINDS = frozenset(device_helpers.NAMES)
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
                kind in _HELPER_KINDS
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
        return tuple(helpers), frozenset(arms), frozenset(uses), relative, frozenset(alone)
    except (KeyError, TypeError):
        return None


def _under(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _choose(found: list[HelperRef], files_naming) -> tuple[HelperRef, ...]:
    """One helper per kind: the port's own where present, else the most used (the one most
    files name: ``files_naming(names)`` counts them, asked only where a kind has a choice),
    then the one in the shallowest module."""
    by_kind: dict[str, list[HelperRef]] = {}
    for ref in found:
        if ref.kind == "device" or (ref.name.startswith("_") and not ref.ours):
            continue  # a torch.device maker reads worse than a type helper; private ones stay private
        by_kind.setdefault(ref.kind, []).append(ref)
    contested = tuple(sorted({r.name for refs in by_kind.values() if len(refs) > 1 for r in refs}))
    uses = files_naming(contested) if contested else {}
    chosen = []
    for _kind, refs in sorted(by_kind.items()):

        def rank(r: HelperRef):
            return (not r.ours, not r.call, -uses.get(r.name, 0), r.module.count("."), r.module, r.name)

        chosen.append(min(refs, key=rank))
    return tuple(chosen)


def _public(ref: HelperRef, inits: dict[str, str]) -> HelperRef:
    """The helper with the packages that export it (torchtune.utils re-exports
    torchtune.utils._device.get_torch_device_namespace), shallowest first."""
    if not ref.call:
        return ref
    parts = ref.module.split(".")
    publics = []
    for i in range(1, len(parts)):
        pkg = ".".join(parts[:i])
        text = inits.get(pkg, "")
        if re.search(
            rf"^[ \t]*from[ \t]+\S+[ \t]+import[^\n]*\b{re.escape(ref.name)}\b", text, re.MULTILINE
        ) or re.search(
            rf"^[ \t]*from[ \t]+\S+[ \t]+import[ \t]*\((?:[^)]*?)\b{re.escape(ref.name)}\b",
            text,
            re.MULTILINE,
        ):
            publics.append(pkg)
    return HelperRef(ref.kind, ref.module, ref.name, ref.call, ref.ours, tuple(publics))


def _own_module_path(top: Path, configured: str | None) -> tuple[str, Path] | None:
    """Where the port's helper module goes: the configured module, else <top>/_device.py
    (another free name if that one holds something else)."""
    if configured:
        parts = configured.split(".")
        if parts[0] != top.name or not all(p.isidentifier() for p in parts):
            return None
        return configured, top.parent.joinpath(*parts).with_suffix(".py")
    for name in (device_helpers.MODULE_NAME, device_helpers.MODULE_NAME + "_helpers"):
        path = top / f"{name}.py"
        if not os.path.lexists(path) or _is_ours(path):
            return f"{top.name}.{name}", path
    return None


def _is_ours(path: Path) -> bool:
    data = _read(path)
    if data is None:
        return False
    try:
        tree = ast.parse(data.decode("utf-8", "replace"))
    except (SyntaxError, ValueError):
        return False
    return any(device_helpers.recognise(n) for n in tree.body)


def _package_files(top: Path) -> list[str]:
    """The package's Python files (in its sub-packages, not in plain folders), as strings:
    at most ``MAX_PACKAGE_FILES``. (Noted as read: worker processes may read them.)"""
    out: list[str] = []
    for folder, dirs, files in os.walk(top, followlinks=False):
        reads.folder(folder)
        for d in dirs:
            reads.folder(os.path.join(folder, d))  # a package when it holds an __init__.py
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d != "__pycache__"
            and os.path.isfile(os.path.join(folder, d, "__init__.py"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                if len(out) >= MAX_PACKAGE_FILES:
                    return out
                out.append(os.path.join(folder, name))
                reads.file(out[-1])
    return out


def script_imports(name: str, data: bytes | None = None) -> set[str]:
    """The packages a script outside any package imports (``data``: its bytes, as for
    ``file_facts``)."""
    return imported_tops(_bytes_of(name, data))


def _bytes_of(name: str, data: bytes | None) -> bytes | None:
    """The bytes discovery reads of ``name``: ``data`` if the caller read them and discovery
    would read them too (a regular file, not a symlink, of at most MAX_READ bytes)."""
    if data is None:
        return _read(name)
    return data if len(data) <= MAX_READ and _readable(name) else None


def _read(path: Path | str) -> bytes | None:
    """A regular file's bytes (not through a symlink), None past ``MAX_READ``."""
    try:
        if not _readable(path):
            return None
        return read_bytes(path, MAX_READ)[0]  # (a buffered read(MAX_READ) cost 4x more)
    except (OSError, SourceError):
        return None


def _readable(path: Path | str) -> bool:
    """A regular file (not a symlink) of at most ``MAX_READ`` bytes."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_READ


def _torch_local(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch":
                    return a.asname or "torch"
    return "torch"


def declared_min_torch(folder: Path, root: Path) -> tuple[int, int] | None:
    """The lowest torch the project declares (``torch>=X.Y`` in the dependency files of
    ``folder`` or of its nearest parent, up to the scan root, that has any), or None when it
    declares none. Every dependency file of that folder counts, the lowest floor wins (a
    ``requirements.txt`` allowing 1.11 beside a pyproject asking 2.3: the code must run on
    1.11): forms a port writes must exist in the oldest torch the project allows."""
    try:
        stop = os.path.realpath(root)
        cur = Path(os.path.realpath(folder))
    except OSError:
        return None
    for _ in range(8):
        versions = []
        for path in _dep_files(cur):
            data = _read(path)
            if data is not None:
                versions += [(int(a), int(b)) for a, b in _TORCH_MIN.findall(data.decode("utf-8", "replace"))]
        if versions:
            return min(versions)
        if str(cur) == stop or not str(cur).startswith(stop) or cur.parent == cur:
            break
        cur = cur.parent
    return None
