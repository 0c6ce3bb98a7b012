"""The stretches of Python source no matcher reads: comments, and docstrings.

``inert_spans(data)`` lists the byte spans of a file's comments and of its strings that
stand alone as a statement (a docstring, or a bare string) and hold whitespace, found by a
regex lexer (strings and comments) and bracket counting, without parsing. No matcher reads
comments (the AST has none); a bare string statement is an ``Expr(Constant)`` that the
matchers pass over (context-string skips it; env-var matches whole names, which hold no
whitespace). A token the prefilter finds only there cannot yield a finding, so the file is
not parsed: in transformers, 81 of the 209 files holding a token hold it only in a docstring
example (``>>> model.to("cuda")``) or a comment.

``Inert(data).place(offset)`` also tells code from the other string literals: a kind that
reads only names and imports (``RuleKind.reads == "code"``: qualified-name) cannot match a
token inside a string literal, one that reads only strings (context-string) cannot match it
in code, so such a token there does not make the file worth parsing either (an f-string
counts as both: its fields are code). In transformers that skips 20 more files, most of them
naming CUDA in an error message.

When the lexer cannot be sure it reads the file as Python would, it answers None and the
file is parsed: a quote left outside every string (``if"x"``, an unterminated string) or an
f-string whose braces do not balance (Python 3.12's nested quotes ``f"{d["k"]}"``).
"""

from __future__ import annotations

import bisect
import re

_START = re.compile(rb"[#\"']")  # where a comment or a string may start
_PREFIX = frozenset(b"rRbBuUfFtT")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NESTED = re.compile(rb"'[^'\r\n]*'|\"[^\"\r\n]*\"")
_BLANKS = b" \t\f"
# a stretch of code's brackets, as "(" and ")": one translate, then one count
_AS_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"()[]{}")


def inert_spans(data: bytes) -> list[tuple[int, int]] | None:
    """(start, end) of every comment and every whitespace-holding string that is a whole
    statement, in order; None when the lexer is unsure of the file."""
    lexer = Inert(data).lex()
    return None if lexer.unsure else lexer.spans


class Inert:
    """``covers(offset)``: is the offset inside an inert span? The file is lexed only as far
    as the offsets asked about (a token found in code early settles a file early). Once the
    lexer is unsure, no offset is covered: a mistake shows at the token where it happens,
    so the spans before it stand, but nothing is claimed past it."""

    def __init__(self, data: bytes):
        self.data = data
        self.spans: list[tuple[int, int]] = []
        # (prefix start, quote, end, bracket depth) of each string
        self.strings: list[tuple[int, int, int, int]] = []
        self._starts: list[int] = []
        self._string_starts: list[int] = []
        self.unsure = False
        self._pos = 0
        self._depth = 0
        self._at_start = True  # at the start of a statement (at depth 0)
        self._done = False

    def lex(self) -> Inert:
        """Lex the whole file (``unsure`` tells whether the spans and strings cover it)."""
        self.covers(len(self.data))
        return self

    def covers(self, offset: int) -> bool:
        while not self._done and self._pos <= offset:
            self._step()
        if self.unsure and offset >= self._pos:
            return False
        i = bisect.bisect_right(self._starts, offset) - 1
        return i >= 0 and offset < self.spans[i][1]

    def place(self, offset: int) -> str:
        """What holds the offset: "inert" (a comment or docstring), "string" (another string
        literal), "fstring" (an f- or t-string: its fields are code), "code", or "unsure"
        (the lexer stopped before it)."""
        if self.covers(offset):
            return "inert"
        if self.unsure and offset >= self._pos:
            return "unsure"
        i = bisect.bisect_right(self._string_starts, offset) - 1
        if i < 0 or offset >= self.strings[i][2]:
            return "code"
        start, quote, _, _ = self.strings[i]
        prefix = self.data[start:quote].lower()
        return "fstring" if b"f" in prefix or b"t" in prefix else "string"

    def _add(self, start: int, end: int) -> None:
        self.spans.append((start, end))
        self._starts.append(start)

    def _stop(self, unsure: bool) -> None:
        self._done, self.unsure = True, unsure
        self._pos = len(self.data) + 1 if not unsure else self._pos

    def _step(self) -> None:
        """Lex the next comment or string (and the code before it)."""
        data, pos = self.data, self._pos
        m = _START.search(data, pos)
        if m is None:
            self._stop(unsure=False)
            return
        j = m.start()
        comment = data[j] == 35
        k = j  # where the token starts: a string's prefix letters before its quote
        while not comment and k > pos and j - k < 2 and data[k - 1] in _PREFIX:
            k -= 1
        if not comment and k > 0 and data[k - 1] in _WORD:  # `if"x"`: not a prefix
            self._stop(unsure=True)
            return
        if k > pos:
            gap = data[pos:k]
            brackets = gap.translate(_AS_PARENS, _NOT_BRACKETS)
            self._depth += len(brackets) - 2 * brackets.count(b")")
            self._at_start = _ends_statement(gap, self._at_start)
        n = len(data)
        if comment:  # to the end of its line
            end = _line_end(data, j, n)
            self._add(j, end)
            self._pos = end
            return
        end = _string_end(data, j, n)
        literal, prefix = data[j:end], data[k:j].lower()
        if end < 0 or ((b"f" in prefix or b"t" in prefix) and not _balanced(literal)):
            self._stop(unsure=True)  # unterminated, or an f-string with a quote nested in a field
            return
        self.strings.append((k, j, end, self._depth))
        self._string_starts.append(k)
        if self._depth == 0 and self._at_start and _alone(data, end, n) and _holds_whitespace(literal):
            self._add(k, end)
        self._at_start = False
        self._pos = end


def _line_end(data: bytes, i: int, n: int) -> int:
    """Where the line holding ``data[i]`` ends (its \\n, or a \\r before it)."""
    nl = data.find(b"\n", i, n)
    nl = n if nl == -1 else nl
    cr = data.find(b"\r", i, nl)
    return nl if cr == -1 else cr


def _string_end(data: bytes, j: int, n: int) -> int:
    """The end of the string literal whose quote is at ``j`` (-1: unterminated)."""
    quote = data[j : j + 3] if data[j : j + 3] in (b'"""', b"'''") else data[j : j + 1]
    p = j + len(quote)
    while True:
        e = data.find(quote, p)
        if e == -1:
            return -1
        if len(quote) == 1 and not _continued(data, p, e):
            return -1  # one line, unless a backslash continues it
        if not _escaped(data, e, p):
            return e + len(quote)
        p = e + 1


def _continued(data: bytes, p: int, e: int) -> bool:
    """Is every line break in ``data[p:e]`` escaped by a backslash?"""
    for brk in (b"\n", b"\r"):
        q = data.find(brk, p, e)
        while q != -1:
            at = q - 1 if brk == b"\n" and q > p and data[q - 1] == 13 else q  # \r\n
            if not _escaped(data, at, p):
                return False
            q = data.find(brk, q + 1, e)
    return True


def _escaped(data: bytes, i: int, lo: int) -> bool:
    """Is ``data[i]`` preceded by an odd run of backslashes (after ``lo``)?"""
    b = i
    while b > lo and data[b - 1] == 92:
        b -= 1
    return (i - b) % 2 == 1


def _ends_statement(gap: bytes, at_start: bool) -> bool:
    """After this stretch of code, does a statement start (a newline not continued by a
    backslash, or a semicolon)? Blanks change nothing."""
    sig = gap.rstrip(_BLANKS)
    if not sig:
        return at_start
    last = sig[-1:]
    if last in (b"\n", b"\r"):
        return not sig.rstrip(b"\r\n").endswith(b"\\")
    return last == b";"


def _alone(data: bytes, end: int, n: int) -> bool:
    """Does the statement end right after the string (newline, comment, semicolon, EOF)?"""
    j = end
    while j < n and data[j] in _BLANKS:
        j += 1
    return j == n or data[j] in b"\r\n#;"


def _body(literal: bytes) -> bytes:
    """A string literal's text between its quotes (its prefix already aside)."""
    q = 3 if literal[:3] in (b'"""', b"'''") else 1
    return literal[q:-q]


def _holds_whitespace(literal: bytes) -> bool:
    body = _body(literal)
    return any(c in body for c in (b" ", b"\t", b"\n", b"\r"))


def _balanced(literal: bytes) -> bool:
    """An f-string's replacement fields close within it (else the lexer may have ended it
    at a quote nested inside a field)."""
    body = _NESTED.sub(b"", _body(literal).replace(b"{{", b"").replace(b"}}", b""))
    return body.count(b"{") == body.count(b"}")
