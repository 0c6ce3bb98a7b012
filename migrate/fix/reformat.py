"""Keep a port's lines within the file's own habits.

A rewrite makes lines longer (``torch.cuda.empty_cache()`` becomes
``get_device_module().empty_cache()``).

* In a project whose files pass ``ruff format --check`` (a ``[tool.ruff]``/``ruff.toml``
  governs the file, and the original text passes with it), the rewritten text is formatted
  the same way: only what the port changed can move, the rest was formatted already.
* Elsewhere, a line the port made longer than the project's line length is wrapped as
  ruff format wraps it (``--range``: only the statements holding such lines, quotes as
  written), never anything else; a line whose original already exceeded that length, or
  whose code fits and only its own trailing comment overflows, stays one line as its author
  left it. The line length is the project's formatter setting
  (``line-length`` of ruff or black in pyproject.toml / ruff.toml, ``max-line-length`` or
  ``column_limit`` in setup.cfg / tox.ini / .flake8), else the file's own: its longest line
  of code (a comment never counts; a docstring or a string's inner lines, which no
  formatter wraps, count up to 88), 79 at least (PEP 8), so a file whose lines run to 195
  columns is not rewrapped at 88. A ruff table that sets no length (ruff's default, 88)
  yields to the file's own longest line where that is longer (a ``[tool.ruff]`` of lint
  settings only, in a project whose files ruff does not format); black's default of 88
  holds.

In a project that formats with yapf (its style file found first), yapf wraps those lines
instead, in the project's style (migrate/fix/yapf_style.py). Without ruff (neither on PATH
nor importable) and yapf the text stays exactly as the port wrote it.
"""

from __future__ import annotations

import configparser
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from functools import cache
from pathlib import Path

from migrate.fix.yapf_style import wrap_with_yapf, yapf_style

TIMEOUT = 30
DEFAULT_LINE_LENGTH = 88  # ruff's and black's
OLDEST_TARGET = "py37"  # ruff's oldest Python: the line wrapping writes nothing newer
PEP8_LINE_LENGTH = 79
MAX_LINE_LENGTH = 320  # ruff's largest
_TOML_KEYS = (("tool", "ruff", "line-length"), ("tool", "black", "line-length"))
_CFG_KEYS = (
    ("flake8", "max-line-length"),
    ("pycodestyle", "max-line-length"),
    ("yapf", "column_limit"),
    ("isort", "line_length"),
)


@cache
def _ruff() -> list[str] | None:
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def _uses_ruff(path: Path) -> bool:
    """Does a pyproject.toml (with [tool.ruff]), ruff.toml or .ruff.toml govern ``path``?"""
    folder = Path(os.path.abspath(path)).parent
    for cur in (folder, *folder.parents):
        if (cur / "ruff.toml").is_file() or (cur / ".ruff.toml").is_file():
            return True
        project = cur / "pyproject.toml"
        if project.is_file():
            return "[tool.ruff" in (_read_config(project) or "")
    return False


def _format(cmd: list[str], path: Path, text: str, check: bool, extra: tuple[str, ...] = ()) -> str | None:
    path = Path(os.path.abspath(path))  # ruff finds the project's configuration from it
    args = [*cmd, "format", *extra, "--stdin-filename", str(path), "--quiet"]
    if check:
        args.insert(len(cmd) + 1, "--check")
    try:
        proc = subprocess.run(
            [*args, "-"], input=text, capture_output=True, text=True, timeout=TIMEOUT, cwd=path.parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return text if check else proc.stdout


def configured_line_length(path: Path) -> int | None:
    """The line length the project's formatter or linter config sets for ``path``: the
    nearest folder holding a ruff.toml, .ruff.toml, pyproject.toml, setup.cfg, tox.ini or
    .flake8 that sets one decides, a formatter's (ruff, black: 88 unless set) before a
    linter's; None where none does."""
    folder = Path(os.path.abspath(path)).parent
    for cur in (folder, *folder.parents):
        for name in ("ruff.toml", ".ruff.toml"):
            value = _toml_length(cur / name, (("line-length",),))
            if value is not None:
                return value
        value = _toml_length(cur / "pyproject.toml", _TOML_KEYS)
        if value is not None:
            return value
        for name in ("setup.cfg", "tox.ini", ".flake8"):
            value = _cfg_length(cur / name)
            if value is not None:
                return value
    return None


class _Default(int):
    """A formatter's default line length (88), where its table sets none: a project whose
    ``[tool.ruff]`` holds lint settings only may still write far longer lines."""


def line_limit(path: Path, old_text: str) -> int:
    """The longest line a port may write in ``path`` (see the module docstring)."""
    configured = configured_line_length(path)
    if configured is not None and not isinstance(configured, _Default):
        return configured
    prose = _string_lines(old_text)
    lines = [(n in prose, x.rstrip()) for n, x in enumerate(old_text.splitlines(), 1)]
    lines = [(string, x) for string, x in lines if not x.lstrip().startswith("#")]
    longest = max((len(x) for string, x in lines if not string), default=0)
    # a docstring line counts up to the formatters' 88: the code beside it may have been
    # formatted at 88 without reaching it, but a 100-column docstring says nothing
    strings = max((len(x) for string, x in lines if string), default=0)
    longest = max(longest, min(strings, DEFAULT_LINE_LENGTH))
    if configured is not None:  # the default, unless the file's own lines run longer
        return max(int(configured), min(longest, MAX_LINE_LENGTH))
    return min(max(longest, PEP8_LINE_LENGTH), MAX_LINE_LENGTH)


def _string_lines(text: str) -> set[int]:
    """The 1-based lines that hold only string text: the inner lines of a string spanning
    several, and a string alone on its line (a docstring, an argument such as a long
    f-string message). A formatter never wraps them, so their length says nothing of the
    width the file's code keeps to (opacus: 126-column messages beside code at 88)."""
    out: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    lead = True  # no code before this token on its logical line
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.STRING:
            (first, _), (last, _) = tok.start, tok.end
            out.update(range(first + 1, last + 1))
            after = tokens[i + 1] if i + 1 < len(tokens) else None
            if after is not None and after.string == "," and i + 2 < len(tokens):
                after = tokens[i + 2]  # a string argument on its own line, then its comma
            if lead and (after is None or after.type in _LINE_ENDS):
                out.add(first)
        lead = tok.type in _LINE_STARTS
    return out


_LINE_STARTS = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)
_LINE_ENDS = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER)


def _read_config(path: Path) -> str | None:
    """The text of a regular file within the limit the config reader keeps
    (core/inputs.py MAX_DOC_BYTES), or None."""
    from migrate.core.fileio import SourceError, read_bytes
    from migrate.core.inputs import MAX_DOC_BYTES

    if not path.is_file():
        return None
    try:
        return read_bytes(path, MAX_DOC_BYTES)[0].decode("utf-8", "replace")
    except (SourceError, OSError):
        return None


def _valid(value) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 40 <= value <= 320:
        return value
    return None


def _toml_length(path: Path, keys: tuple[tuple[str, ...], ...]) -> int | None:
    """The line length a formatter's TOML config sets: its ``line-length``, or the
    formatter's default (88) where the formatter's table is there without one."""
    text = _read_config(path)
    if text is None or (len(keys[0]) > 1 and not re.search(r"\[tool\.(ruff|black)", text)):
        return None  # a pyproject.toml without a formatter table: cheap to tell
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError):
        return None
    for key in keys:
        node: object = data
        for part in key[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            if _valid(node.get(key[-1])):
                return _valid(node.get(key[-1]))
            # ruff's table also holds lint settings: its default binds only a file that
            # ruff formats (those are formatted by ruff itself, above); black's always does
            return DEFAULT_LINE_LENGTH if "black" in key else _Default(DEFAULT_LINE_LENGTH)
    return None


def _cfg_length(path: Path) -> int | None:
    text = _read_config(path)
    if text is None or not re.search(r"line[-_]length|column_limit", text):
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    for section, key in _CFG_KEYS:
        if parser.has_option(section, key) and _valid(parser.get(section, key)) is not None:
            return _valid(parser.get(section, key))
    return None


def keep_formatted(path: Path, old_text: str, new_text: str, limit: int | None = None) -> str:
    """``new_text``, formatted as ruff formats the project if ``old_text`` was; else with
    the lines the port made longer than ``limit`` (default: ``line_limit``) wrapped."""
    if new_text == old_text or not str(path).endswith((".py", ".pyi")):
        return new_text
    style = yapf_style(path, _read_config)
    if style is not None:
        lines = _long_lines(old_text, new_text, line_limit(path, old_text) if limit is None else limit)
        wrapped = wrap_with_yapf(style, new_text, lines, _only_at) if lines else new_text
        if wrapped is not None:
            return wrapped
    cmd = _ruff()
    if cmd is None:
        return new_text
    if _uses_ruff(path) and _format(cmd, path, old_text, check=True) is not None:
        formatted = _format(cmd, path, new_text, check=False)
        return formatted if formatted else new_text
    return _wrap_long(cmd, path, old_text, new_text, line_limit(path, old_text) if limit is None else limit)


def _wrap_long(cmd: list[str], path: Path, old_text: str, new_text: str, limit: int) -> str:
    """Wrap the new lines longer than ``limit``, bottom up."""
    text, new = new_text, new_text.splitlines()
    for line in sorted(_long_lines(old_text, new_text, limit), reverse=True):
        content = new[line - 1]
        extra = (
            "--isolated",
            "--line-length",
            str(min(limit, MAX_LINE_LENGTH)),
            "--config",
            "format.quote-style='preserve'",
            # no syntax the project's Python may lack: `with (a, b):` is 3.9+ (minGPT's
            # trainer.py, for a project that declares no Python)
            "--target-version",
            OLDEST_TARGET,
            "--range",
            f"{line}:{len(content) - len(content.lstrip()) + 1}-{line}:{len(content) + 1}",
        )
        wrapped = _format(cmd, path, text, check=False, extra=extra)
        if wrapped:
            text = _only_at(text, wrapped, line - 1)
    return text


def _long_lines(old_text: str, new_text: str, limit: int) -> list[int]:
    """The 1-based lines of ``new_text`` the port made longer than ``limit``: not a comment,
    not a line whose old counterpart was already longer, not one where only its own trailing
    comment overflows."""
    import difflib

    old, new = old_text.splitlines(), new_text.splitlines()
    comments = _comment_columns(new_text)
    long_lines = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for j in range(j1, j2):
            if len(new[j]) <= limit or new[j].lstrip().startswith("#"):
                continue
            near = i1 + min(j - j1, i2 - i1)  # where the old line would sit: look around it
            was = _counterpart(new[j], old[max(i1, near - _NEAR) : min(i2, near + _NEAR)])
            if len(was) > limit or len(new[j][: comments.get(j + 1)].rstrip()) <= limit:
                continue  # longer already, or only its own comment overflows: as its author left it
            long_lines.append(j + 1)
    return long_lines


_NEAR = 40  # old lines each side of a changed line's place that may be its counterpart


def _counterpart(line: str, candidates: list[str]) -> str:
    """The old line among ``candidates`` most like ``line`` ("" if none is): the one the
    port rewrote into it."""
    import difflib

    best, score = "", 0.6
    for old in candidates:
        # the characters both share (quick_ratio): linear, where ratio() is quadratic on
        # the long lines this is asked about
        ratio = difflib.SequenceMatcher(None, old, line, autojunk=False).quick_ratio()
        if ratio > score:
            best, score = old, ratio
    return best


def _comment_columns(text: str) -> dict[int, int]:
    """Line number (1-based) -> column of the comment that ends that line of code."""
    import io
    import tokenize

    columns: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and tok.line[: tok.start[1]].strip():
                columns[tok.start[0]] = tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass  # what was read so far still counts
    return columns


def _only_at(text: str, wrapped: str, index: int) -> str:
    """``text`` with only the change ``wrapped`` makes to its line ``index`` (0-based):
    ruff also spaces the statements around a formatted range, which the port leaves as is."""
    import difflib

    a, b = text.splitlines(keepends=True), wrapped.splitlines(keepends=True)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        out.extend(b[j1:j2] if tag != "equal" and i1 <= index < i2 else a[i1:i2])
    return "".join(out)
