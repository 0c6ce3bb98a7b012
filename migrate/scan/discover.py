"""Find the files a scan reads: walk folders, skip VCS/venv/build folders, honour .gitignore.

Yields SourceFile entries and collects problems (symlink loops, unreadable folders) as
FileErrors instead of raising. Files named explicitly on the command line are always read.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from migrate.core.findings import FileError

SKIP_DIRS = {
    ".git", ".hg", ".svn", ".bzr", "__pycache__", "node_modules", ".venv", "venv", ".tox",
    ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".eggs", "__pypackages__",
    "site-packages", ".migrate_cache", ".direnv", "buck-out", "_build",
}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # as found (may be relative to cwd)
    rel: str  # relative to the scan root, forward slashes
    kind: str  # python | onnx | notebook | a text kind from textfiles.file_kind


def file_kind(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in (".py", ".pyi", ".pyw"):
        return "python"
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".ipynb":
        return "notebook"
    try:
        from migrate.scan.text import scanner as textfiles
    except ImportError:  # pragma: no cover - text rules not installed
        return None
    return textfiles.file_kind(path)


def _shebang_kind(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return "python" if path.suffix == "" else None  # let the reader report the error
    return "python" if first.startswith(b"#!") and b"python" in first else None


def scan_root(paths: list[Path]) -> Path:
    """Paths in reports are relative to this folder."""
    if len(paths) == 1:
        p = paths[0]
        return p if p.is_dir() else (p.parent if str(p.parent) else Path("."))
    return Path(".")


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


class Walker:
    def __init__(self, root: Path, exclude: list[str], respect_gitignore: bool = True):
        self.root = root
        self.exclude = exclude
        self.gitignore = respect_gitignore
        self.errors: list[FileError] = []

    def excluded(self, rel: str, name: str) -> bool:
        return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in self.exclude)

    def walk(self, paths: list[Path]) -> Iterator[SourceFile]:
        seen_files: set[str] = set()
        for p in paths:
            if p.is_dir():
                yield from self._walk_dir(p, seen_files)
            else:
                kind = file_kind(p) or _shebang_kind(p)
                key = os.path.realpath(p)
                if kind and key not in seen_files:
                    seen_files.add(key)
                    yield SourceFile(p, _rel(p, self.root), kind)

    def _walk_dir(self, top: Path, seen_files: set[str]) -> Iterator[SourceFile]:
        visited: set[str] = set()
        top_rel = _rel(top, self.root)
        stack = [(top, "" if top_rel == "." else top_rel, [])]
        while stack:
            folder, folder_rel, specs = stack.pop()
            real = os.path.realpath(folder)
            if real in visited:
                self.errors.append(FileError(folder_rel or ".", "symlink loop; skipped"))
                continue
            visited.add(real)
            if (folder / "pyvenv.cfg").exists():
                continue  # a virtual environment
            specs = self._with_gitignore(folder, specs)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                self.errors.append(FileError(folder_rel or ".", f"cannot read folder: {exc.strerror}"))
                continue
            subdirs = []
            for entry in entries:
                rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir and (entry.name in SKIP_DIRS or entry.name.endswith(".egg-info")):
                    continue
                path = Path(entry.path)
                if self._ignored(path, is_dir, specs) or (self.exclude and self.excluded(rel, entry.name)):
                    continue
                if is_dir:
                    subdirs.append((path, rel))
                    continue
                kind = file_kind(path)
                if kind is None:
                    continue
                if entry.is_symlink():
                    if not path.exists():
                        self.errors.append(FileError(rel, "broken symbolic link; skipped"))
                        continue
                    key = os.path.realpath(path)
                else:
                    key = entry.path
                if key in seen_files:
                    continue
                seen_files.add(key)
                yield SourceFile(path, rel, kind)
            stack.extend((d, r, specs) for d, r in reversed(subdirs))

    def _with_gitignore(self, folder: Path, specs):
        if not self.gitignore:
            return specs
        gi = folder / ".gitignore"
        if gi.is_file():
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                return [*specs, (folder, pathspec.GitIgnoreSpec.from_lines(lines))]
            except OSError:
                return specs
        return specs

    @staticmethod
    def _ignored(path: Path, is_dir: bool, specs) -> bool:
        for base, spec in specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False
