"""File kinds: the one table of what a file is, which engine's rule kinds read it, how the
scan reads it, whether ``migrate apply`` rewrites it, and which comment ``--annotate``
writes in it.

Discovery (``detect``), the scan workers (``reader``), apply (``rewritable``), annotate
(``comment``), the rule loader (``engine``: a rule's ``files`` must name kinds some engine
reads) and the tests read this table; nothing else lists file kinds. A new file kind is a
row here plus, if it needs one, a reader in migrate/scan/readers.py (checked at import).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePath

from migrate.core.fileio import read_head


@dataclass(frozen=True)
class FileKind:
    name: str
    engine: str  # python | text | onnx: whose rule-kind matchers run (migrate/core/kinds.py)
    reader: str  # how the scan reads it: python | notebook | text | onnx (scan/readers.py)
    rewritable: bool = True  # `migrate apply` edits it (notebooks and models are reported only)
    comment: str | None = None  # a whole-line comment marker --annotate may write, if safe
    suffixes: tuple[str, ...] = ()  # lower-case file-name suffixes
    names: tuple[str, ...] = ()  # lower-case whole file names


_ROWS = (
    FileKind("python", "python", "python", comment="#", suffixes=(".py", ".pyi", ".pyw")),
    FileKind("notebook", "python", "notebook", rewritable=False, suffixes=(".ipynb",)),
    FileKind("onnx", "onnx", "onnx", rewritable=False, suffixes=(".onnx",)),
    FileKind(
        "shell",
        "text",
        "text",
        comment="#",
        suffixes=(".sh", ".bash", ".zsh", ".ksh", ".slurm", ".sbatch"),
        names=(".envrc",),
    ),
    FileKind(
        "docker",
        "text",
        "text",
        comment="#",
        suffixes=(".dockerfile",),
        names=("dockerfile", "containerfile"),
    ),
    FileKind("make", "text", "text", suffixes=(".mk",), names=("makefile", "gnumakefile")),
    FileKind("yaml", "text", "text", suffixes=(".yml", ".yaml")),
    FileKind("conda", "text", "text", names=("environment.yml", "environment.yaml")),
    FileKind("requirements", "text", "text", comment="#"),
    FileKind("pyproject", "text", "text", names=("pyproject.toml",)),
    FileKind("setup-cfg", "text", "text", names=("setup.cfg",)),
    FileKind("cuda", "text", "text", comment="//", suffixes=(".cu", ".cuh")),
    FileKind("env", "text", "text", comment="#", suffixes=(".env",), names=(".env",)),
    FileKind("cmake", "text", "text", suffixes=(".cmake",), names=("cmakelists.txt",)),
)
FILE_KINDS: dict[str, FileKind] = {k.name: k for k in _ROWS}
TEXT_KINDS: tuple[str, ...] = tuple(k.name for k in _ROWS if k.engine == "text")
_BY_SUFFIX = {s: k.name for k in _ROWS for s in k.suffixes}
_BY_NAME = {n: k.name for k in _ROWS for n in k.names}
_SHELL = re.compile(rb"^#![ \t]*(?:/usr)?/bin/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?:ba|z|da|k)?sh\b")


def engine_of(kind: str) -> str:
    """The engine whose rule kinds read files of ``kind`` (text for a name not in the table)."""
    row = FILE_KINDS.get(kind)
    return row.engine if row is not None else "text"


def detect(path: PurePath | str) -> str | None:
    """The file kind of ``path`` by its name (a file without a suffix: by a shell shebang read
    from disk); None for anything the scan does not read."""
    where = os.fspath(path)
    name = os.path.basename(where).lower()
    suffix = _suffix(name)
    if suffix in _BY_SUFFIX and FILE_KINDS[_BY_SUFFIX[suffix]].engine != "text":
        return _BY_SUFFIX[suffix]  # Python, notebooks, models: by suffix before any name rule
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.startswith(("dockerfile.", "dockerfile-", "containerfile.")):
        return "docker"
    if name.endswith(".txt") and ("requirements" in name or name.startswith("constraints")):
        return "requirements"
    if name.endswith((".txt", ".in")) and os.path.basename(os.path.dirname(where)).lower() == "requirements":
        return "requirements"
    if name.endswith(".in") and name.startswith(("constraints", "requirements")):
        return "requirements"
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if name.startswith(".env."):
        return "env"
    if not suffix and not name.startswith("."):
        return "shell" if _SHELL.match(read_head(where, 128)) else None
    return None


def _suffix(name: str) -> str:
    """``PurePath(name).suffix``, without building a path."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""
