"""Blank out comments in non-Python text files, keeping every offset in place.

``mask_comments(text, kind)`` returns a string of the same length as ``text`` in which each
comment's characters are replaced by spaces (line breaks stay). Matchers then run their
regexes on the masked text and the offsets they find are valid in the original text, so a
mention of ``CUDA_VISIBLE_DEVICES`` in a comment is never a finding.

Comment syntax per file kind (one line at a time, so an unbalanced quote cannot hide the
rest of a file):

* shell, docker RUN lines, make recipes, env: ``#`` at the start of a word, outside quotes;
* docker: also a whole line whose first non-blank character is ``#``;
* make (outside recipes): any ``#`` not escaped by a backslash;
* yaml, conda: ``#`` after a blank or at the line start, outside quoted scalars;
* pyproject (TOML): ``#`` outside strings;
* requirements: ``#`` after a blank or at the line start (pip's rule; ``#egg=`` survives);
* setup-cfg (INI): lines starting with ``#`` or ``;``.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"[^\n]*\n?")
_SHELL_WORD_START = " \t;&|()"


def mask_comments(text: str, kind: str) -> str:
    mask_line = _MASKERS.get(kind)
    comment_chars = ";#" if kind == "setup-cfg" else "#"
    if mask_line is None or not any(c in text for c in comment_chars):
        return text
    out = []
    for m in _LINE.finditer(text):
        line = m.group()
        if not line:
            break
        out.append(mask_line(line) if any(c in line for c in comment_chars) else line)
    return "".join(out)


def _blank_from(line: str, pos: int | None) -> str:
    if pos is None:
        return line
    body = line.rstrip("\r\n")
    return line[:pos] + " " * (len(body) - pos) + line[len(body) :]


def _quoted_hash(line: str, starts_comment, quote_opens) -> int | None:
    """Index of the first ``#`` outside quotes for which ``starts_comment(i)`` holds."""
    quote = ""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "\\":
            i += 2
            continue
        elif c in "'\"" and quote_opens(i):
            quote = c
        elif c == "#" and starts_comment(i):
            return i
        i += 1
    return None


def _shell(line: str) -> str:
    def word_start(i: int) -> bool:
        return i == 0 or line[i - 1] in _SHELL_WORD_START

    return _blank_from(line, _quoted_hash(line, word_start, lambda i: True))


def _docker(line: str) -> str:
    if line.lstrip().startswith("#"):
        return _blank_from(line, len(line) - len(line.lstrip()))
    return _shell(line)


def _make(line: str) -> str:
    if line.startswith("\t"):
        return _shell(line)
    for m in re.finditer(r"#", line):
        i = m.start()
        backslashes = len(line[:i]) - len(line[:i].rstrip("\\"))
        if backslashes % 2 == 0:
            return _blank_from(line, i)
    return line


def _yaml(line: str) -> str:
    def after_blank(i: int) -> bool:
        return i == 0 or line[i - 1] in " \t"

    def opens(i: int) -> bool:
        return i == 0 or line[i - 1] in " \t:[{,-="

    return _blank_from(line, _quoted_hash(line, after_blank, opens))


def _toml(line: str) -> str:
    return _blank_from(line, _quoted_hash(line, lambda i: True, lambda i: True))


def _requirements(line: str) -> str:
    m = re.search(r"(?:^|(?<=[ \t]))#", line)
    return _blank_from(line, m.start() if m else None)


def _ini(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith(("#", ";")):
        return _blank_from(line, len(line) - len(stripped))
    return line


_MASKERS = {
    "shell": _shell,
    "env": _shell,
    "docker": _docker,
    "make": _make,
    "yaml": _yaml,
    "conda": _yaml,
    "pyproject": _toml,
    "requirements": _requirements,
    "setup-cfg": _ini,
    "cmake": _shell,  # `#` line comments (bracket comments #[[ ]] are rare in build files)
}
