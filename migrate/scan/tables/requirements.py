"""Parse one requirement string (pip or conda style) enough to name its package.

Handles ``name[extras] >=1.0 ; marker``, ``name @ url``, conda ``channel::name=1.0=build``,
``git+https://host/org/repo.git#egg=name``, direct wheel/sdist URLs and ``-e URL``. The
result keeps offsets so a fix can edit the version in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
_URLISH = re.compile(r"^(?:git\+|hg\+|svn\+|bzr\+)?[a-z][a-z0-9+.-]*://|^(?:\.{0,2}/|~/)")


@dataclass(frozen=True)
class Requirement:
    name: str  # normalized (PEP 503): lower case, runs of -_. as "-"
    raw_name: str  # as written
    start: int  # offsets of the whole requirement in the file text
    end: int
    spec_start: int  # version/url part (after name and extras, before any ";" marker)
    spec_end: int


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str, start: int, end: int) -> Requirement | None:
    """The requirement in text[start:end], or None if it names no package."""
    s = text[start:end]
    lead = len(s) - len(s.lstrip())
    s = s.strip()
    if not s:
        return None
    base = start + lead
    if s.startswith(("-e ", "--editable ", "--editable=")):
        cut = len(s) - len(s.split(None, 1)[-1]) if " " in s else len("--editable=")
        return parse_requirement(text, base + cut, base + len(s))
    if _URLISH.match(s):
        name = _name_from_url(s)
        if not name:
            return None
        return Requirement(normalize(name), name, base, base + len(s), base, base + len(s))
    whole = base, base + len(s)
    if "::" in s.split("[", 1)[0]:  # conda channel::name
        cut = s.index("::") + 2
        base, s = base + cut, s[cut:]
    m = _NAME.match(s)
    if not m:
        return None
    pos = m.end()
    if pos < len(s) and s[pos] == "[":
        close = s.find("]", pos)
        pos = close + 1 if close != -1 else pos
    marker = s.find(";", pos)
    spec_end = marker if marker != -1 else len(s)
    while spec_end > pos and s[spec_end - 1].isspace():
        spec_end -= 1
    return Requirement(normalize(m.group()), m.group(), whole[0], whole[1], base + pos, base + spec_end)


def _name_from_url(url: str) -> str | None:
    egg = _EGG.search(url)
    if egg:
        return egg.group(1)
    path = unquote(urlsplit(url.removeprefix("git+")).path).rstrip("/")
    if not path:
        return None
    base = path.rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        return base.split("-", 1)[0]
    for ext in (".tar.gz", ".tar.bz2", ".zip", ".tgz"):
        if base.endswith(ext):
            stem = base[: -len(ext)]
            return stem.rsplit("-", 1)[0] if "-" in stem else stem
    base = base.split("@", 1)[0]
    if base.endswith(".git"):
        base = base[:-4]
    return base if _NAME.fullmatch(base or "-") else None


def hash_pinned(text: str, pos: int) -> bool:
    """Whether the requirement line at ``pos`` (with its ``\\`` continuations) pins a
    ``--hash``: pip's hash-checking mode rejects any other file."""
    end = pos
    while True:
        nl = text.find("\n", end)
        if nl < 0:
            end = len(text)
            break
        j = nl  # the line's end before its CRs (no copy of the text: linear per file)
        while j > pos and text[j - 1] == "\r":
            j -= 1
        if not (j > pos and text[j - 1] == "\\"):
            end = nl
            break
        end = nl + 1
    return "--hash" in text[pos:end]
