"""What every file with a possible finding must contain: a cheap test before parsing.

Built from the rule table itself. A use of ``torch.cuda.synchronize`` spells every segment
of the name somewhere in the file (in the import or the attribute chain), so one segment
of each key is a sound token; we pick one that names CUDA, else the one most keys share.
A token is a literal (found with bytes.find, i.e. memmem) plus, where it helps, a regex
that confirms it: a whole identifier (``flash_attn`` but not ``_supports_flash_attn``),
or, for a top-level module, an import statement naming it. Each kind derives its rows'
tokens (its ``tokens`` function in migrate.core.kinds); kinds that match literals take
``params.prefilter`` words as plain literals.

The same tokens, as one text regex, mark the lines the matchers walk (see pyfile.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick

from migrate.core.kinds import Token, kind
from migrate.core.rules import Rule
from migrate.scan.python.inert import Inert

# Segments too common to be useful as tokens.
_COMMON = {
    "torch",
    "nn",
    "utils",
    "functional",
    "distributed",
    "optim",
    "ops",
    "backends",
    "amp",
    "matmul",
    "modules",
    "data",
    "models",
    "module",
    "parallel",
    "__init__",
    "version",
    "Backend",
    "_C",
    "C",
    "common",
    "core",
    "layers",
    "init",
    "config",
    "types",
    "base",
}
_MARKERS = ("cuda", "nccl", "cudnn", "nvtx", "nvml")


def _segments(key: str) -> list[str]:
    return [s for s in key.removesuffix(".*").split(".") if s]


_COUNTS: dict[tuple[str, ...], dict[str, int]] = {}  # by the selection's rule codes


def segment_counts(rules: tuple[Rule, ...]) -> dict[str, int]:
    """How many qualified-name keys share each segment: the shared ones make few tokens.
    (Asked once per rule while a RuleSet builds its prefilters: kept per selection, keyed by
    the rule codes, so no rule is hashed.)"""
    key = tuple(r.code for r in rules)
    counts = _COUNTS.get(key)
    if counts is None:
        if len(_COUNTS) >= 8:
            _COUNTS.clear()
        counts = _COUNTS[key] = {}
        for rule in rules:
            if rule.kind == "qualified-name":
                for name in rule.params.get("names") or {}:
                    for seg in set(_segments(name)):
                        counts[seg] = counts.get(seg, 0) + 1
    return counts


def key_token(key: str, counts: dict[str, int] | None = None) -> Token:
    """The segment of ``key`` to look for: one naming CUDA if any, else the most shared."""
    segs = _segments(key)
    candidates = [s for s in segs if s not in _COMMON and len(s) > 2] or segs[-1:]
    marked = [s for s in candidates if any(m in s.lower() for m in _MARKERS)]
    counts = counts or {}
    seg = max(marked or candidates, key=lambda s: (counts.get(s, 0), len(s)))
    word = rf"(?<![\w]){re.escape(seg)}(?![\w])"
    if seg == segs[0]:  # a top-level module: every use goes through an import naming it
        return Token(seg, rf"(?:import|from)[ \t][^\n]*{word}", line=True)
    return Token(seg, word, line=True)


def minimal_tokens(tokens: set[Token]) -> list[Token]:
    """Drop plain tokens that contain another plain token read wherever they are: a file
    holding them there holds it (``cuda`` read only in strings does not stand for
    ``is_cuda_available`` read in code)."""
    plain = [t for t in tokens if t.pattern is None]
    kept = [
        t
        for t in tokens
        if not (
            t.pattern is None
            and any(
                o.literal != t.literal
                and o.literal in t.literal
                and _MATTERS[o.context] >= _MATTERS[t.context]
                for o in plain
            )
        )
    ]
    return sorted(kept, key=lambda t: (-len(t.literal), t.literal, t.pattern or ""))


# A confirming regex is searched, never matched: a leading ``\w*`` matches the empty string
# wherever the rest does, and dropping it saves a backtracking scan from every position.
_LEADING_WORD = re.compile(r"^(?:\\w\*)+")


# where in a file (migrate/scan/python/inert.py Inert.place) a token of each context matters
_MATTERS = {
    None: frozenset({"code", "string", "fstring", "unsure"}),
    "code": frozenset({"code", "fstring", "unsure"}),  # an f-string's fields are code
    "strings": frozenset({"string", "fstring", "unsure"}),
}


class _Check:
    """One literal's exact check, for the tokens of one context: the literal, then (unless a
    token of it is plain) its confirming regexes: line-confined ones on the lines holding the
    literal, others on the whole file."""

    def __init__(self, literal: bytes, tokens: list[Token], context: str | None = None):
        self.literal = literal
        self.context = context
        self.plain = any(t.pattern is None for t in tokens)
        line = [t.pattern for t in tokens if t.pattern and t.line]
        whole = [t.pattern for t in tokens if t.pattern and not t.line]
        self.line_rx = None if self.plain else _alternation(line)
        self.file_rx = None if self.plain else _alternation(whole)

    def holds(self, data: bytes) -> bool:
        if self.literal not in data:
            return False
        if self.plain:
            return True
        if self.file_rx is not None and self.file_rx.search(data):
            return True
        rx = self.line_rx
        return rx is not None and rx.search(_lines_holding(data, self.literal)) is not None

    def outside(self, data: bytes, inert: Inert) -> bool:
        """Does the check hold at an offset where its context matters (never in a comment or
        docstring; for "code" tokens not in a string, for "strings" tokens only in one)?"""
        if self.plain:
            return self._literal_matters(data, inert, 0, len(data))
        if self.context is None:
            return any(not inert.covers(m.start()) for m in self._matches(data))
        # a match's literal decides (a match may start in a string and end in code:
        # ``s = "from "; import x``); a match without it, its start
        return any(self._match_matters(data, inert, m) for m in self._matches(data))

    def _matches(self, data: bytes) -> Iterator[re.Match[bytes]]:
        """The confirming regexes' matches, in order: a line-confined one's only on the lines
        that hold the literal (searched in place: its lookbehinds see the line's start)."""
        if self.file_rx is not None:
            yield from self.file_rx.finditer(data)
        if self.line_rx is None:
            return
        pos = data.find(self.literal)
        while pos != -1:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end == -1 else end
            yield from self.line_rx.finditer(data, start, end)
            pos = data.find(self.literal, end)

    def _match_matters(self, data: bytes, inert: Inert, m: re.Match[bytes]) -> bool:
        if data.find(self.literal, m.start(), m.end()) == -1:
            return inert.place(m.start()) in _MATTERS[self.context]
        return self._literal_matters(data, inert, m.start(), m.end())

    def _literal_matters(self, data: bytes, inert: Inert, start: int, end: int) -> bool:
        matters = _MATTERS[self.context]
        pos = data.find(self.literal, start, end)
        while pos != -1:
            if inert.place(pos) in matters:
                return True
            pos = data.find(self.literal, pos + 1, end)
        return False


def _alternation(patterns: list[str]) -> re.Pattern[bytes] | None:
    if not patterns:
        return None
    return re.compile("|".join(_LEADING_WORD.sub("", p) for p in patterns).encode())


def _lines_holding(data: bytes, literal: bytes) -> bytes:
    """The lines of ``data`` that hold ``literal``, joined by newlines (a line-confined
    regex matches here exactly when it matches in ``data``: each line keeps its ends)."""
    out = []
    pos = data.find(literal)
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        out.append(data[start:end])
        pos = data.find(literal, end)
    return b"\n".join(out)


class Prefilter:
    """``search(data)``: does the file hold any token?

    Stage 1 looks for a few lower-case literals (anchors) in the lower-cased file (``cuda``
    stands for CUDA_HOME, is_cuda and CUDAGraph alike), so most files cost one lower() and
    one Aho-Corasick pass for all anchors (a memmem per anchor, 41 of them for the shipped
    rules, cost ten times more). Each exact check belongs to an anchor its literal contains;
    a file that passes is checked exactly only for the anchors it holds: each literal, then
    its confirming regex. ``automaton=False`` uses a memmem per anchor (same answers: the
    reference the tests hold the automaton to).
    """

    def __init__(self, tokens: list[Token], automaton: bool = True):
        self.tokens = tokens
        by_literal: dict[tuple[bytes, str | None], list[Token]] = {}
        for t in tokens:
            by_literal.setdefault((t.literal.encode(), t.context), []).append(t)
        self._checks = [_Check(lit, ts, context) for (lit, context), ts in by_literal.items()]
        lowered = {lit.lower() for lit, _ in by_literal}
        anchors = [x for x in lowered if not any(o != x and o in x for o in lowered)]
        # anchor -> the exact checks whose lower-cased literal contains it (each check under
        # the first anchor it contains: a file holding the literal holds that anchor); plain
        # checks first, since they settle a file without a regex
        self._stage1 = sorted(anchors, key=len)
        self._by_anchor: dict[bytes, list[_Check]] = {a: [] for a in self._stage1}
        for check in sorted(self._checks, key=lambda c: not c.plain):
            anchor = next(a for a in self._stage1 if a in check.literal.lower())
            self._by_anchor[anchor].append(check)
        # anchors that settle a file with a plain literal first: most files stop there
        self._stage1.sort(key=lambda a: (not any(c.plain for c in self._by_anchor[a]), len(a)))
        self._anchors = BytesAhoCorasick(self._stage1) if automaton and self._stage1 else None
        literals = sorted({check.literal.decode() for check in self._checks})
        self._literals = AhoCorasick(literals) if automaton and literals else None

    def search(self, data: bytes, code: bool = False) -> bool:
        """Does ``data`` hold a token; with ``code``, outside its comments and docstrings
        (migrate/scan/python/inert.py: no matcher reads them)?"""
        low = data.lower()
        inert: Inert | None = None
        anchors: list[bytes] = self._stage1
        if self._anchors is not None:  # the anchors the file holds, in stage-1 order
            held = {i for i, _, _ in self._anchors.find_matches_as_indexes(low, overlapping=True)}
            anchors = [anchors[i] for i in sorted(held)]
        for anchor in anchors:
            if self._anchors is not None or anchor in low:
                for check in self._by_anchor[anchor]:
                    if not check.holds(data):
                        continue
                    if not code:
                        return True
                    inert = inert or Inert(data)
                    if check.outside(data, inert):
                        return True
        return False

    def hit_offsets(self, text: str) -> list[int]:
        """Offsets of every literal in ``text`` (a superset of the exact matches)."""
        if self._literals is not None:
            return [start for _, start, _ in self._literals.find_matches_as_indexes(text, overlapping=True)]
        out = []
        for lit in dict.fromkeys(check.literal.decode() for check in self._checks):
            pos = text.find(lit)
            while pos != -1:
                out.append(pos)
                pos = text.find(lit, pos + 1)
        return out


def python_prefilter(rules: tuple[Rule, ...], target: str | None = None) -> Prefilter | None:
    """None means: no sound prefilter (some python rule declares no tokens); read every file.
    Each token carries where its kind reads (``RuleKind.reads``); with a ``target``, kinds
    that never report under it give none."""
    tokens: set[Token] = set()
    for rule in rules:
        spec = kind("python", rule.kind) if "python" in rule.files else None
        if spec is None or (target is not None and spec.targets is not None and target not in spec.targets):
            continue
        t = {replace(x, context=spec.reads) for x in spec.tokens(rule, rules) if x.literal}
        if not t:
            return None  # the rule table's load check makes this unreachable for shipped rules
        tokens |= t
    return Prefilter(minimal_tokens(tokens))
