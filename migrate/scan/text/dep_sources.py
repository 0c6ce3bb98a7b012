"""Where requirements live in each kind of file; each locator yields Requirement objects.

* requirements: one per line (``-r``/``-c``/index options are left alone; ``-e URL`` counts);
* pyproject: ``[project] dependencies``, ``[project.optional-dependencies]``,
  ``[dependency-groups]``, ``[build-system] requires`` and Poetry dependency tables, as
  tomllib reads them (a file tomllib rejects yields nothing);
* setup-cfg: ``install_requires``/``setup_requires``/``tests_require`` and extras;
* conda: items under ``dependencies:`` including the nested ``- pip:`` list;
* shell, docker, make, yaml: the package arguments of ``pip install`` (also ``$(PIP)``,
  ``uv pip``, ``python -m pip``), ``conda``/``mamba install``, ``uv add`` and ``poetry add``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from migrate.scan.tables.requirements import Requirement, normalize, parse_requirement
from migrate.scan.text.textfile import TextFile

_LINE = re.compile(r"^[^\n]*", re.MULTILINE)
_INSTALL = re.compile(
    r"(?<![\w./-])(?:(?:pip[0-9.]*|\$\(PIP\)|\$\{PIP\}|\$PIP|uv[ \t]+pip|pipx|"
    r"python[0-9.]*[ \t]+-m[ \t]+pip|conda|mamba|micromamba)[ \t]+install|"
    r"(?:uv|poetry)[ \t]+add)(?![\w-])"
)
# Options whose value is the next word (pip and conda install).
_TAKES_VALUE = frozenset(
    "-r --requirement -c --constraint -i --index-url --extra-index-url -f --find-links "
    "-t --target --prefix --root --src --upgrade-strategy -C --config-settings "
    "--global-option --install-option --python-version --platform --implementation --abi "
    "--only-binary --no-binary --trusted-host --cache-dir --log --progress-bar --report "
    "--python --channel -n --name -p --file --group -G --optional --extra".split()
)
_END = set(";&|)`<>\n")


def locate(tf: TextFile) -> Iterator[Requirement]:
    locator = _LOCATORS.get(tf.kind)
    if locator is not None:
        yield from locator(tf)
    if tf.kind in ("shell", "docker", "make", "yaml"):
        yield from _install_args(tf)


def _requirements(tf: TextFile) -> Iterator[Requirement]:
    for m in _LINE.finditer(tf.masked):
        body = m.group().strip()
        if not body or (body.startswith("-") and not body.startswith(("-e", "--editable"))):
            continue
        req = parse_requirement(tf.text, m.start(), m.start() + len(m.group().rstrip(" \t\r\\")))
        if req:
            yield req


def _install_args(tf: TextFile) -> Iterator[Requirement]:
    text = tf.masked
    for m in _INSTALL.finditer(text):
        skip_next = False
        for start, end in _words(text, m.end()):
            word = text[start:end]
            if skip_next:
                skip_next = False
                continue
            if word.startswith("-"):
                opt = word.split("=", 1)[0]
                skip_next = opt in _TAKES_VALUE and "=" not in word and opt not in ("-e",)
                continue
            if "$" in word or word in (".", ".."):
                continue
            req = parse_requirement(tf.text, start, end)
            if req:
                yield req


def _words(text: str, pos: int) -> Iterator[tuple[int, int]]:
    """Spans of shell words after ``pos`` up to the end of the command (quotes stripped)."""
    n = len(text)
    while pos < n:
        c = text[pos]
        if c == "\\" and text[pos + 1 : pos + 2] in ("\n", "\r"):
            pos = _after_continuation(text, pos + 1)
            continue
        if c in " \t\r":
            pos += 1
            continue
        if c in _END:
            return
        if c in "'\"":
            close = text.find(c, pos + 1)
            if close == -1 or "\n" in text[pos:close]:
                return
            yield pos + 1, close
            pos = close + 1
            continue
        start = pos
        while pos < n and text[pos] not in " \t\r" and text[pos] not in _END:
            pos += 1
        end = pos
        while end > start and text[end - 1] in "'\"\\":
            end -= 1
        if end > start:
            yield start, end


def _after_continuation(text: str, pos: int) -> int:
    """Skip the line break after a backslash and any blank (or masked comment) lines, as
    Docker does inside a continued RUN."""
    m = re.compile(r"\r?\n(?:[ \t]*\r?\n)*").match(text, pos)
    return m.end() if m else pos + 1


def _setup_cfg(tf: TextFile) -> Iterator[Requirement]:
    section, key_indent, active = "", -1, False
    keys = ("install_requires", "setup_requires", "tests_require")
    for m in _LINE.finditer(tf.masked):
        line = m.group().rstrip("\r")
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        header = re.match(r"\s*\[([^\]]+)\]", line)
        if header:
            section, active = header.group(1).strip(), False
            continue
        if indent <= key_indent or not active:
            kv = re.match(r"\s*([\w.-]+)\s*[=:]", line)
            active = kv is not None and (
                (section == "options" and kv.group(1) in keys) or section == "options.extras_require"
            )
            if not active or kv is None:
                continue
            key_indent = indent
            start = m.start() + kv.end()
        else:
            start = m.start()
        req = parse_requirement(tf.text, start, m.start() + len(line.rstrip()))
        if req:
            yield req


def _conda(tf: TextFile) -> Iterator[Requirement]:
    section = ""
    for m in _LINE.finditer(tf.masked):
        line = m.group().rstrip("\r")
        top = re.match(r"([A-Za-z_][\w-]*)\s*:", line)
        if top:
            section = top.group(1)
            continue
        item = re.match(r"\s*-\s+(['\"]?)(.*?)\1\s*$", line)
        if section != "dependencies" or not item or item.group(2).rstrip().endswith(":"):
            continue
        req = parse_requirement(tf.text, m.start() + item.start(2), m.start() + item.end(2))
        if req:
            yield req


def _pyproject(tf: TextFile) -> Iterator[Requirement]:
    from migrate.scan.text.pyproject import dependency_strings, poetry_keys

    allowed = dependency_strings(tf.text)
    if allowed is None:
        return
    from migrate.scan.text.pyproject import array_strings

    for start, end in array_strings(tf.masked):
        if tf.text[start:end] in allowed:
            req = parse_requirement(tf.text, start, end)
            if req:
                yield req
    for name_start, name_end, spec_start, spec_end in poetry_keys(tf.masked):
        name = tf.text[name_start:name_end]
        if name.lower() == "python":
            continue
        yield Requirement(normalize(name), name, name_start, name_end, spec_start, spec_end)


_LOCATORS = {
    "requirements": _requirements,
    "setup-cfg": _setup_cfg,
    "conda": _conda,
    "pyproject": _pyproject,
}
