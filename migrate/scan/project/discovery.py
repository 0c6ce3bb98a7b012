"""Package discovery: the project context for the scanned Python files, each package's
facts read once (or reused from the facts cache, migrate/scan/project_cache.py), and the
package a package or script without helpers of its own takes them from.
"""

from __future__ import annotations

import os
from pathlib import Path

from migrate.scan.library_checks import absent_checks
from migrate.scan.project.context import PackageInfo, ProjectContext
from migrate.scan.project.facts import (
    _facts_data,
    _facts_from_data,
    _FileFacts,
    _package_facts,
    imported_tops,
)
from migrate.scan.project.min_torch import declared_min_torch
from migrate.scan.project.namespace import namespace_module
from migrate.scan.project.own_module import _own_module_path, _under
from migrate.scan.project.packages import _is_package
from migrate.scan.project.reading import _package_files, _read
from migrate.scan.project_cache import FactsCache, signature


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
    spaced: list[tuple[Path, str]] = []  # in a namespace folder of a package
    for path, rel in files:
        ctx.paths[rel] = path
        top, _ = ctx.package_of(path)
        if top is None and (ns := namespace_module(path, ctx.known)) is not None:
            ctx.namespaced[rel] = (str(ns[0]), ns[1], ns[2])
            top = ns[0]
            spaced.append((path, rel))
        folder = str(path.parent if top is None else top.parent)
        if folder not in ctx.absent:
            ctx.absent[folder] = absent_checks(_ancestors(Path(folder), root))
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
    ctx.imported_scripts = {rel for path, rel in scripts + spaced if path.stem in imported}


def _size(ctx: ProjectContext, info: PackageInfo) -> int:
    """How many Python files the package has (listed when its facts were read)."""
    listed = ctx.listed.get(str(info.path))
    return len(listed[0]) if listed else 0


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
    ``peft``); one with helpers of its own first, else the largest."""
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
    # else the largest package that would get the port's module: torchtune's tests import
    # `recipes` (14 files) and `torchtune` (176); the module goes in the project's main one
    chosen = own or sorted((p for p in found if p.add_module), key=lambda p: -_size(ctx, p))
    return chosen[0] if chosen else None


def _package(top: Path, ctx: ProjectContext, cache: FactsCache) -> PackageInfo:
    root, configured = ctx.root, ctx.configured
    info = PackageInfo(top, top.name, min_torch=declared_min_torch(top.parent, root))
    files, sig = _listed(top, ctx, cache)
    facts = _facts_from_data(cache.get(top, sig))
    if facts is None:
        facts = _package_facts(top, files, configured, ctx.jobs, ctx.read.get(str(top)))
        cache.put(top, sig, _facts_data(facts))
    info.helpers, info.npu_arms, info.uses, info.relative_imports, info.run_by_path = facts[:5]
    info.family, info.checks = facts[5:]
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
