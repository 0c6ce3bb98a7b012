"""Here-documents of shell scripts and Dockerfiles (``cat <<EOF`` ... ``EOF``): their lines are
data, not code, so an annotation is never added in one and a line in one that only looks
like an annotation (``# migrate[MIG101]: ...``) is never stripped (fix/annotate.py).

``bodies(text)`` maps each line of a here-document's body (1-based; its terminator
included) to the line of the command that opens it. Openers: ``<<WORD``, ``<<-WORD``,
``<<'WORD'``, ``<<"WORD"`` outside quotes and comments (``<<<`` here-strings and ``$((a << b))``
shifts are not); several on one line are read one after another. A body without its
terminator runs to the end of the file, as the shell reads it.
"""

from __future__ import annotations

import re

_OPENER = re.compile(r"(?<![<\d])<<(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][\w.-]*))")


def _openers(line: str) -> list[tuple[bool, str]]:
    """(tabs stripped, delimiter) of each here-document ``line`` opens, in order."""
    if "<<" not in line or line.lstrip().startswith("#"):
        return []
    found = []
    for m in _OPENER.finditer(line):
        before = line[: m.start()]
        if (
            before.count("'") % 2
            or before.count('"') % 2
            or "((" in before
            or "<" == line[m.end(0) : m.end(0) + 1]
        ):
            continue
        if re.search(r"(^|\s)#", before):
            break  # the rest of the line is a comment
        found.append((m.group(1) == "-", m.group(2) or m.group(3) or m.group(4)))
    return found


def bodies(text: str) -> dict[int, int]:
    """Line number of each here-document body line -> line number of its opener."""
    lines = text.splitlines()
    inside: dict[int, int] = {}
    n = 0
    while n < len(lines):
        pending = _openers(lines[n])
        opener = n + 1
        n += 1
        for strip_tabs, word in pending:
            while n < len(lines):
                body = lines[n].lstrip("\t") if strip_tabs else lines[n]
                inside[n + 1] = opener
                n += 1
                if body == word:
                    break
    return inside
