"""Dependency locations in pyproject.toml, with offsets.

tomllib says *what* the dependency strings are; a small walker over the comment-free text
says *where* they are, only inside the tables that hold dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*([^\]\n]+?)[ \t]*\]\]?[ \t]*\r?$", re.MULTILINE)
_KEY = re.compile(r"^[ \t]*(\"?)([A-Za-z0-9_][A-Za-z0-9._-]*)\1[ \t]*=[ \t]*", re.MULTILINE)
_POETRY = re.compile(r"^tool\.poetry\.(?:dependencies|dev-dependencies|group\.[^.]+\.dependencies)$")
# (table, key) pairs whose value is an array of requirement strings; key None = any key.
_ARRAY_TABLES = {
    "project": "dependencies",
    "project.optional-dependencies": None,
    "dependency-groups": None,
    "build-system": "requires",
    "tool.pdm.dev-dependencies": None,
}


class _Everything:
    def __contains__(self, item: object) -> bool:
        return True


def dependency_strings(text: str):
    """Every requirement string in the dependency tables, or None if the TOML is invalid."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10 without tomli: trust the walker alone
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            return _Everything()
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return None
    found: set[str] = set()
    for table, key in _ARRAY_TABLES.items():
        node = data
        for part in table.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if not isinstance(node, dict):
            continue
        values = [node.get(key)] if key else list(node.values())
        for value in values:
            if isinstance(value, list):
                found.update(v for v in value if isinstance(v, str))
    return found


def _sections(masked: str) -> Iterator[tuple[str, int, int]]:
    """(table name, start, end) of each table's body."""
    heads = list(_HEADER.finditer(masked))
    yield "", 0, heads[0].start() if heads else len(masked)
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(masked)
        yield h.group(1).replace(" ", "").replace('"', ""), h.end(), end


def array_strings(masked: str) -> Iterator[tuple[int, int]]:
    """Offsets of the contents of strings in dependency arrays."""
    for table, start, end in _sections(masked):
        if table not in _ARRAY_TABLES:
            continue
        want = _ARRAY_TABLES[table]
        for k in _KEY.finditer(masked, start, end):
            if (want is None or k.group(2) == want) and masked.startswith("[", k.end()):
                yield from _walk_array(masked, k.end(), end)


def _walk_array(text: str, pos: int, limit: int) -> Iterator[tuple[int, int]]:
    depth = 0
    while pos < limit:
        c = text[pos]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return
        elif c in "'\"":
            close = _string_end(text, pos, limit)
            if close < 0:
                return
            yield pos + 1, close
            pos = close
        pos += 1


def _string_end(text: str, pos: int, limit: int) -> int:
    quote = text[pos]
    i = pos + 1
    while i < limit and text[i] != "\n":
        if text[i] == "\\" and quote == '"':
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


def poetry_keys(masked: str) -> Iterator[tuple[int, int, int, int]]:
    """(name start, name end, version start, version end) per Poetry dependency key."""
    for table, start, end in _sections(masked):
        if not _POETRY.match(table):
            continue
        for k in _KEY.finditer(masked, start, end):
            name_start, name_end = k.span(2)
            line_end = masked.find("\n", k.end(), end)
            line_end = end if line_end < 0 else line_end
            value = masked[k.end() : line_end]
            v = re.search(r"^\"([^\"]*)\"|^'([^']*)'|version\s*=\s*\"([^\"]*)\"", value)
            if v:
                g = next(i for i in (1, 2, 3) if v.group(i) is not None)
                yield name_start, name_end, k.end() + v.start(g), k.end() + v.end(g)
            else:
                yield name_start, name_end, k.end(), k.end()
