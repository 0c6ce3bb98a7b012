"""Files a user hands to an option (``--gate``, ``--mapping``, ``--config``, ``--inputs``, a
model, a dump's manifest): untrusted input, opened one way.

* ``input_path`` — the path must be given (an empty string is an unset shell variable, not
  the current folder) and name a regular file (a FIFO would block, ``/dev/zero`` never ends,
  a folder is not a file): a UsageError of one line otherwise. For files a library opens by
  name (onnx, numpy, safetensors).
* ``read_input`` — the bytes of such a file, never more than ``limit`` (read through
  core/fileio.read_bytes: non-blocking open, ``S_ISREG`` on the open descriptor).
* ``load_yaml`` — a YAML mapping from a bounded file: the safe loader, a cap on aliases and
  on the size of the document once aliases are expanded (a "billion laughs" file is a few
  hundred bytes), no recursive structures, nesting depth bounded.
* ``load_json`` — JSON (a manifest) from a bounded file, depth bounded.

Every message names the option and the path, escaped, on one line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.fileio import SourceError, read_bytes

__all__ = ["MAX_DOC_BYTES", "MAX_NODES", "input_path", "load_json", "load_yaml", "read_input", "require_path"]

MAX_DOC_BYTES = 16 * 1024 * 1024  # a gate, mapping, config or manifest
MAX_ALIASES = 1000
MAX_NODES = 1_000_000  # values in a document once aliases are expanded
MAX_DEPTH = 200


def require_path(path: str | os.PathLike | None, what: str) -> Path:
    """``path`` as a Path; a UsageError when it is empty (``migrate apply ""`` is an unset
    variable, never "the current folder")."""
    if path is None or str(path) == "":
        raise UsageError(f"{what}: empty path")
    if "\x00" in str(path):
        raise UsageError(f"{what} {escape(str(path))}: a path cannot hold a NUL character")
    return Path(path)


def input_path(path: str | os.PathLike | None, what: str, limit: int | None = None) -> Path:
    """``path`` checked to be an existing regular file (symlinks followed), at most
    ``limit`` bytes; UsageError otherwise."""
    p = require_path(path, what)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise UsageError(f"{what} {escape(str(p))}: {_why(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, device or socket)"
        raise UsageError(f"{what} {escape(str(p))}: {kind}; give a file")
    if limit is not None and st.st_size > limit:
        raise UsageError(f"{what} {escape(str(p))}: too large ({st.st_size} bytes, limit {limit})")
    return p


def read_input(path: str | os.PathLike | None, what: str, limit: int = MAX_DOC_BYTES) -> bytes:
    """The bytes of the regular file ``path``; UsageError (one line) for anything else."""
    p = require_path(path, what)
    try:
        return read_bytes(p, limit)[0]
    except SourceError as exc:
        raise UsageError(f"{what} {escape(str(p))}: {exc}") from None


def _why(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower() if exc.errno else str(exc)


def _text(data: bytes, what: str, path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what} {escape(str(path))}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def _loader():
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Bounded(base):  # type: ignore[misc, valid-type]  # CSafeLoader or SafeLoader, chosen at run time
        """The safe loader, counting aliases as they are composed."""

        aliases = 0

        def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)

    return Bounded


def load_yaml(
    path: str | os.PathLike | None, what: str, limit: int = MAX_DOC_BYTES, data: bytes | None = None
) -> Any:
    """The YAML document in ``path`` (or ``data``), bounded: see the module doc."""
    import yaml

    if data is None:
        data = read_input(path, what, limit)
    text = _text(data, what, path)
    try:
        loader = _loader()(text)
        try:
            doc = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise UsageError(
            f"{what} {escape(str(path))}: invalid YAML: {escape(' '.join(str(exc).split()))[:300]}"
        ) from None
    except RecursionError:
        raise UsageError(f"{what} {escape(str(path))}: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise UsageError(
            f"{what} {escape(str(path))}: invalid YAML: {escape(' '.join(str(exc).split()))[:300]}"
        ) from None
    check_size(doc, f"{what} {escape(str(path))}")
    return doc


def load_json(
    path: str | os.PathLike | None, what: str, limit: int = MAX_DOC_BYTES, finite: bool = False
) -> Any:
    """The JSON document in ``path``: bounded size and depth (``finite``: no NaN/Infinity,
    which Python's writer emits and strict JSON lacks)."""
    data = read_input(path, what, limit)

    def constant(name: str):
        raise ValueError(f"{name} is not a JSON number")

    try:
        doc = json.loads(_text(data, what, path), parse_constant=constant if finite else None)
    except RecursionError:
        raise UsageError(f"{what} {escape(str(path))}: nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{what} {escape(str(path))}: invalid JSON: {escape(str(exc))[:300]}") from None
    return doc  # JSON has no aliases: its values are bounded by its size


def check_size(doc: Any, where: str) -> None:
    """Refuse a document that is recursive, nested deeper than MAX_DEPTH or that holds more
    than MAX_NODES values once shared parts (YAML aliases) are counted at every use."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise UsageError(f"{where}: a recursive structure (an alias inside itself)")
        if depth > MAX_DEPTH:
            raise UsageError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        active.add(key)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_NODES:
                raise UsageError(f"{where}: more than {MAX_NODES} values once aliases are expanded")
        active.discard(key)
        sizes[key] = total
        return total

    size(doc, 0)


def check_glob(glob: str, where: str) -> str:
    """``glob`` if it is a path glob that can match something; UsageError naming ``where``
    otherwise: an empty glob, one holding a NUL or a line break, or an unclosed ``[``
    (fnmatch would quietly read it as a literal and never match)."""
    if not glob.strip():
        raise UsageError(f"{where}: an empty glob (it matches no path)")
    if any(c in glob for c in "\0\n\r"):
        raise UsageError(f"{where} {glob!r}: a glob cannot hold a NUL or a line break")
    i, n = 0, len(glob)
    while i < n:
        if glob[i] == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1  # a ']' first in the set is a member
            close = glob.find("]", j)
            if close < 0:
                raise UsageError(f"{where} {glob!r}: '[' at character {i + 1} is never closed")
            i = close
        i += 1
    return glob
