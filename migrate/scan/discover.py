"""Find the files a scan reads: walk folders, skip VCS/venv/build folders, honour .gitignore.

Yields SourceFile entries and collects problems (unreadable folders, broken links, bad
.gitignore lines) as FileErrors instead of raising. Files named explicitly on the command
line are always read. Every file is yielded once, by its real path (``scan t/a.py t``, an
in-tree symlink alias, a folder reached twice). Symlinks whose target lies outside the
given paths are not followed unless ``follow_symlinks``; a symlink loop is skipped.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from migrate.core import reads
from migrate.core.fileio import SourceError, read_bytes, read_head
from migrate.core.filekinds import _suffix, detect
from migrate.core.findings import FileError

SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    "__pycache__",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".eggs",
    "__pypackages__",
    "site-packages",
    ".migrate_cache",
    ".direnv",
    "buck-out",
    "_build",
}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # as found (may be relative to cwd): the path that is opened
    rel: str  # relative to the scan root, forward slashes
    kind: str  # a file kind of migrate/core/filekinds.py
    real: str = ""  # its resolved path (symlinks followed), as discovery saw it


def file_kind(path: Path | str) -> str | None:
    """The kind of a file met while walking a folder (migrate/core/filekinds.py)."""
    return detect(path)


def read_by_scan(path: Path, paths: list[Path]) -> bool:
    """Whether a scan of ``paths`` would read the existing file ``path`` (a kind it scans,
    a .gitignore, a pyproject.toml) : such a file is never a report's destination."""
    if not os.path.isfile(path):
        return False
    real = os.path.realpath(path)
    given = [os.path.realpath(p) for p in paths]
    if real in given:
        return True
    if not _inside(real, [g for g in given if os.path.isdir(g)]):
        return False
    return bool(path.name == ".gitignore" or file_kind(path) or _shebang_kind(path))


def _shebang_kind(path: Path) -> str | None:
    first = read_head(path, 200).split(b"\n", 1)[0]
    if not first and path.suffix == "":
        return "python" if _unreadable(path) else None  # let the reader report the error
    return "python" if first.startswith(b"#!") and b"python" in first else None


def _unreadable(path: Path) -> bool:
    reads.file(path)
    try:
        with open(path, "rb", buffering=0, opener=_nonblocking):
            return False
    except OSError:
        return True


def _nonblocking(path, flags):
    return os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def scan_root(paths: list[Path]) -> Path:
    """Paths in reports are relative to this folder."""
    if len(paths) == 1:
        p = paths[0]
        return p if _is_dir(p) else (p.parent if str(p.parent) else Path("."))
    return Path(".")


def _rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root``; a file's own symlink is not resolved (a link is
    reported under its own name)."""
    if _is_dir(path) or path.name in ("", ".", ".."):
        full = os.path.realpath(path)
    else:
        full = os.path.join(os.path.realpath(os.path.dirname(path) or "."), path.name)
    try:
        return Path(full).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return path.as_posix()


def _inside(real: str, roots: list[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class Walker:
    def __init__(
        self, root: Path, exclude: list[str], respect_gitignore: bool = True, follow_symlinks: bool = False
    ):
        self.root = root
        self.exclude = exclude
        self.gitignore = respect_gitignore
        self.follow = follow_symlinks
        self.errors: list[FileError] = []
        self.roots: list[str] = []

    def excluded(self, rel: str, name: str) -> bool:
        return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in self.exclude)

    def walk(self, paths: list[Path]) -> Iterator[SourceFile]:
        seen: set[str] = set()
        self.roots = [os.path.realpath(p) for p in paths]
        for p in paths:
            if _is_dir(p):
                yield from self._walk_dir(p, seen)
                continue
            kind = file_kind(p) or _shebang_kind(p)
            key = os.path.realpath(p)
            if kind and key not in seen:
                seen.add(key)
                yield SourceFile(p, _rel(p, self.root), kind, key)

    def _walk_dir(self, top: Path, seen: set[str]) -> Iterator[SourceFile]:
        top_rel = _rel(top, self.root)
        # Each folder carries its real path (its parent's real path and its name, or the
        # link's target): resolving every folder again would cost its depth in lstat calls.
        stack: list[tuple[Path, str, list, str, int]] = [
            (top, "" if top_rel == "." else top_rel, [], os.path.realpath(top), 0)
        ]
        while stack:
            folder, folder_rel, specs, real, depth = stack.pop()
            if real in seen:
                continue  # reached before (an alias, a loop or a path given twice)
            seen.add(real)
            if depth > MAX_DEPTH:
                self.errors.append(
                    FileError(folder_rel, f"folder nested more than {MAX_DEPTH} levels deep; not scanned")
                )
                continue
            reads.folder(folder)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                self.errors.append(FileError(folder_rel or ".", f"cannot read folder: {exc.strerror}"))
                continue
            if any(e.name == "pyvenv.cfg" for e in entries):
                continue  # a virtual environment
            specs = self._with_gitignore(folder, folder_rel, entries, specs)
            subdirs = []
            for entry in entries:
                found = self._entry(entry, real, folder_rel, specs, seen)
                if isinstance(found, SourceFile):
                    yield found
                elif found is not None:
                    subdirs.append(found)
            stack.extend((d, r, specs, k, depth + 1) for d, r, k in reversed(subdirs))

    def _entry(self, entry: os.DirEntry, real_folder: str, folder_rel: str, specs, seen: set[str]):
        """A SourceFile, a (folder, rel, real path) to descend into, or None."""
        rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
        try:
            is_dir = entry.is_dir()
            link = entry.is_symlink()
        except OSError:
            is_dir, link = False, False
        if is_dir and (entry.name in SKIP_DIRS or entry.name.endswith(".egg-info")):
            return None
        if not is_dir and _suffix(entry.name.lower()) and file_kind(entry.path) is None:
            return None  # by its name alone, nothing the scan reads (a suffix-less file may be a script)
        if self._ignored(rel, is_dir, specs) or (self.exclude and self.excluded(rel, entry.name)):
            return None
        path = Path(entry.path)
        kind = None if is_dir else file_kind(path)
        if not is_dir and kind is None:
            return None
        key = os.path.realpath(path) if link else os.path.join(real_folder, entry.name)
        if link:
            if not os.path.exists(path):
                self.errors.append(FileError(rel, "broken symbolic link; skipped"))
                return None
            if not self.follow and not _inside(key, self.roots):
                return None  # leaves the given paths (--follow-symlinks to follow it)
        if is_dir:
            if link and _inside(real_folder, [key]):
                self.errors.append(FileError(rel, "symlink loop; skipped"))
                return None
            return None if key in seen else (path, rel, key)
        if key in seen or kind is None:
            return None
        seen.add(key)
        return SourceFile(path, rel, kind, key)

    def _with_gitignore(self, folder: Path, folder_rel: str, entries, specs):
        if not self.gitignore or not any(e.name == ".gitignore" for e in entries):
            return specs
        try:
            data, _ = read_bytes(folder / ".gitignore", 4 * 1024 * 1024)
        except SourceError:
            return specs
        lines = [_collapse_stars(line) for line in data.decode("utf-8", errors="replace").splitlines()]
        where = f"{folder_rel}/.gitignore" if folder_rel else ".gitignore"
        wild = [line for line in lines if _too_wild(line)]
        if wild:  # regex matching would backtrack exponentially on a long name
            self.errors.append(
                FileError(
                    where, f"{len(wild)} pattern(s) with more than {MAX_STARS} '*' in one path part ignored"
                )
            )
            lines = [line for line in lines if not _too_wild(line)]
        try:
            return [*specs, (folder_rel, pathspec.GitIgnoreSpec.from_lines(lines))]
        except Exception:  # pathspec rejects a line ("!", "foo\\"): keep the good ones
            good = [line for line in lines if _valid_pattern(line)]
            bad = len(lines) - len(good)
            self.errors.append(FileError(where, f"{bad} invalid pattern(s) ignored"))
            return [*specs, (folder_rel, pathspec.GitIgnoreSpec.from_lines(good))]

    @staticmethod
    def _ignored(rel: str, is_dir: bool, specs) -> bool:
        """As git decides: the deepest .gitignore with a pattern matching the path wins,
        so ``!model_gen.py`` in a sub-folder re-includes what its parent's file excludes.
        ``rel`` and each .gitignore's folder are relative to the scan root (the walk
        only meets paths below the folder a .gitignore sits in)."""
        for base, spec in reversed(specs):
            below = rel[len(base) + 1 :] if base else rel
            verdict = spec.check_file(below + ("/" if is_dir else "")).include
            if verdict is not None:
                return verdict
        return False


# Folders nested deeper than this below a scanned folder are reported and skipped: no real
# project comes near it, and the path of a file 2,000 levels down is longer than the
# system allows (PATH_MAX).
MAX_DEPTH = 128
MAX_STARS = 3  # single '*' per path part: matching costs about len(name) ** stars


def _too_wild(line: str) -> bool:
    return any(part != "**" and len(_STARS.findall(part)) > MAX_STARS for part in line.split("/"))


_STARS = re.compile(r"\*+")
_STAR_RUN = re.compile(r"(?<!\\)\*{2,}")


def _collapse_stars(line: str) -> str:
    """``line`` with each run of '*' inside a path part written as one '*': git reads them
    so ("other consecutive asterisks are regular asterisks"), and pathspec would turn a run
    of 5,000 into a regex that backtracks for minutes. A whole ``**`` part stays."""
    if "**" not in line:
        return line
    return "/".join(part if part == "**" else _STAR_RUN.sub("*", part) for part in line.split("/"))


def _valid_pattern(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
        return True
    except Exception:
        return False
