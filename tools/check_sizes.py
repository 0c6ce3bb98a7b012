"""The size gate of .ci/run: modules at most 500 lines, functions at most 80 lines.

Every ``*.py`` under the given roots (default: the ones ruff checks, ``migrate tests tools
benchmarks``) is measured; the only folders left out are listed under ``exclude:`` in the
ratchet file, each with its reason, and named in the output. A module's size is its line
count; a function's (or method's) is its ``def`` line to its last line, decorators not
counted, nested functions counted in their parent too.

Today's offenders are listed in the ratchet file (``tools/size_ratchet.yaml``) with their
current sizes as ceilings: they may shrink, never grow. A new offender, an offender grown past
its ceiling, and a ratchet entry that is stale (its module or function is gone, under the
limit or smaller than its ceiling) fail the gate, each naming the file. ``--update`` lowers
the ceilings to today's sizes and drops the entries no longer over the limit; it never raises
a ceiling nor adds an offender.

    python tools/check_sizes.py            # the gate
    python tools/check_sizes.py --update   # after a split: tighten the ratchet
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
RATCHET = REPO / "tools" / "size_ratchet.yaml"
ROOTS = ("migrate", "tests", "tools", "benchmarks")
KINDS = ("module", "function")


@dataclass(frozen=True)
class Ratchet:
    """The ratchet file: the limits, the excluded folders (with reasons), the ceilings."""

    limits: dict[str, int]
    exclude: dict[str, str]
    ceilings: dict[str, dict[str, int]]  # kind -> key -> ceiling

    @classmethod
    def load(cls, path: Path) -> Ratchet:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise SystemExit(f"{path}: expected a mapping with limits, exclude, module, function")
        unknown = set(data) - {"limits", "exclude", *KINDS}
        if unknown:
            raise SystemExit(f"{path}: unknown keys {sorted(unknown)}")
        limits = data.get("limits") or {}
        if set(limits) != set(KINDS) or not all(isinstance(v, int) and v > 0 for v in limits.values()):
            raise SystemExit(f"{path}: limits must give a positive module and function line count")
        exclude = data.get("exclude") or {}
        for folder, reason in exclude.items():
            if not isinstance(reason, str) or not reason.strip():
                raise SystemExit(f"{path}: exclude {folder!r} needs its reason")
        ceilings: dict[str, dict[str, int]] = {}
        for kind in KINDS:
            rows = data.get(kind) or {}
            for key, value in rows.items():
                if not isinstance(value, int) or value <= limits[kind]:
                    raise SystemExit(f"{path}: {kind} {key!r}: ceiling {value!r} must exceed {limits[kind]}")
            ceilings[kind] = dict(rows)
        return cls(dict(limits), dict(exclude), ceilings)

    def dump(self, path: Path, header: str) -> None:
        body = {"limits": self.limits, "exclude": self.exclude}
        body.update({kind: dict(sorted(self.ceilings[kind].items())) for kind in KINDS})
        text = yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=200)
        path.write_text(header + text, encoding="utf-8")


def python_files(repo: Path, roots: Iterable[str], exclude: Iterable[str]) -> Iterator[Path]:
    """Every ``*.py`` under the roots, but for the excluded folders (relative to repo)."""
    skipped = tuple(Path(folder).parts for folder in exclude)
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            parts = path.relative_to(repo).parts
            if any(parts[: len(skip)] == skip for skip in skipped):
                continue
            yield path


def _functions(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every function and method in a module."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                yield name, (child.end_lineno or child.lineno) - child.lineno + 1
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    return walk(tree, "")


def measure(repo: Path, files: Iterable[Path]) -> dict[str, dict[str, int]]:
    """kind -> key -> size, for every module and function (keys: ``path``, ``path:qualname``)."""
    sizes: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
    for path in files:
        rel = path.relative_to(repo).as_posix()
        text = path.read_text(encoding="utf-8")
        sizes["module"][rel] = len(text.splitlines())
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as exc:
            raise SystemExit(f"{rel}: cannot be parsed ({exc.msg}, line {exc.lineno})") from exc
        for name, lines in _functions(tree):
            key = f"{rel}:{name}"
            # a name defined twice (an if/else pair) is measured by its larger definition
            sizes["function"][key] = max(lines, sizes["function"].get(key, 0))
    return sizes


def problems(sizes: dict[str, dict[str, int]], ratchet: Ratchet) -> list[str]:
    """What fails the gate, one line each, naming the file."""
    found: list[str] = []
    for kind in KINDS:
        limit = ratchet.limits[kind]
        ceilings = ratchet.ceilings[kind]
        for key, size in sorted(sizes[kind].items()):
            ceiling = ceilings.get(key)
            if size > limit and ceiling is None:
                found.append(f"{key}: {kind} of {size} lines, over the limit of {limit}: split it")
            elif ceiling is not None and size > ceiling:
                found.append(f"{key}: {kind} grew to {size} lines, past its ratchet ceiling {ceiling}")
        for key, ceiling in sorted(ceilings.items()):
            size = sizes[kind].get(key)
            if size is None:
                found.append(f"{key}: {kind} in the ratchet is gone: remove its line (--update)")
            elif size <= limit:
                found.append(f"{key}: {kind} is {size} lines, within the limit: remove its line (--update)")
            elif size < ceiling:
                found.append(f"{key}: {kind} shrank to {size} lines: lower its ceiling {ceiling} (--update)")
    return found


def tightened(sizes: dict[str, dict[str, int]], ratchet: Ratchet) -> Ratchet:
    """The ratchet with each ceiling lowered to today's size, entries within the limit dropped."""
    ceilings: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        ceilings[kind] = {}
        for key, ceiling in ratchet.ceilings[kind].items():
            size = sizes[kind].get(key)
            if size is not None and size > ratchet.limits[kind]:
                ceilings[kind][key] = min(size, ceiling)
    return Ratchet(ratchet.limits, ratchet.exclude, ceilings)


def _header(path: Path) -> str:
    """The leading comment lines of the ratchet file, kept by --update."""
    header = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.startswith("#"):
            break
        header.append(line)
    return "".join(header)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=list(ROOTS), help="folders to measure")
    parser.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--ratchet", type=Path, default=RATCHET, help="the ratchet file")
    parser.add_argument("--update", action="store_true", help="lower the ceilings to today's sizes")
    args = parser.parse_args(argv)
    ratchet = Ratchet.load(args.ratchet)
    sizes = measure(args.repo, python_files(args.repo, args.roots, ratchet.exclude))
    for folder, reason in ratchet.exclude.items():
        print(f"not measured: {folder} ({reason})")
    if args.update:
        tightened(sizes, ratchet).dump(args.ratchet, _header(args.ratchet))
        ratchet = Ratchet.load(args.ratchet)
    found = problems(sizes, ratchet)
    for line in found:
        print(line, file=sys.stderr)
    counts = ", ".join(f"{len(ratchet.ceilings[k])} {k}s over {ratchet.limits[k]}" for k in KINDS)
    print(f"sizes: {sum(1 for _ in sizes['module'])} modules measured; ratchet: {counts}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
