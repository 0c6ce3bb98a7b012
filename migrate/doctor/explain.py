"""What an error code or message means: ``migrate doctor --explain CODE`` and ``--log FILE``.

Codes are recognised where CANN, ACL and torch_npu print them, so a timestamp or a tensor
value that happens to have six digits is never taken for one:

* CANN error codes (``EE9999``, ``EI0006``, ``E19010``): as whole tokens when the table knows
  them; an unknown one only in the forms CANN prints (``EZ1234:``, ``(EL0005)``);
* ACL return codes (six digits): after ``error code is``, ``ret=``, ``retcode:``,
  ``result =``, ``failed:``, ``aclError``; and their names (``ACL_ERROR_RT_AICORE_EXCEPTION``);
* torch_npu's ``ERRxxyyy SUBMODULE`` codes;
* the messages of ``data/errors.yaml`` (regular expressions).

A log is read as a stream of at most ``limit`` bytes (regular files, or ``-`` for stdin),
4 MiB at a time; only the text around a trigger (a literal every finding holds, found by
fast substring search) is matched exactly, 1 KiB either side in a long line. Each finding is
reported once per file, with its first line, that line's text and the number of lines
holding it; at most 500 distinct findings are kept. Nothing read is executed or written.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.doctor.tables import ErrorTable, Explanation, Source, error_table

LOG_LIMIT = 2 << 30  # bytes scanned per log (then: truncated)
SHOWN = 240  # characters of a log line shown

_ECODE_ANY = re.compile(r"(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4})(?![0-9A-Za-z_])")
_ECODE_PRINTED = re.compile(
    r"(?:(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4}):|\(([EW][0-9A-Z]\d{4})\)"
    r"|ErrorCode=([EW][0-9A-Z]\d{4}))"
)
_ACL = re.compile(
    r"(?:error code is|error code[:=]|\bret(?:code)?\s*[=:]|\bresult\s*=|"
    r"\bfailed:|\baclError\b[^0-9\n]{0,20}|\berror_code\s*[=:])\s*(\d{6})(?!\d)"
)
_ACL_NAME = re.compile(r"\b(ACL_ERROR_[A-Z0-9_]+)\b")
_TORCH_NPU = re.compile(r"\bERR(\d{2})(\d{3}) (PTA|OPS|DIST|GRAPH|PROF|UNKNOWN)\b")
_CODE_ARG = re.compile(r"^(?:\d{6}|[EW][0-9A-Z]\d{4}|ERR\d{5})$")


@dataclass
class Finding:
    """One code or message, explained (``explanation`` None: a code the table lacks)."""

    key: str  # the code, or the message id
    kind: str  # acl | cann | torch_npu | message
    explanation: Explanation | None
    note: str = ""  # for codes without a row: what the code's family says
    note_source: Source | None = None
    line: int = 0  # first line it was seen on (1-based; 0: not from a log)
    text: str = ""  # that line
    count: int = 1
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        e = self.explanation
        return {
            "key": self.key,
            "kind": self.kind,
            "known": e is not None,
            "name": e.title if e else None,
            "component": (e.component if e else None) or None,
            "meaning": e.meaning if e else self.note,
            "cause": e.cause if e else None,
            "fix": e.fix if e else None,
            "sources": [s.cite() for s in e.sources]
            if e
            else ([self.note_source.cite()] if self.note_source else []),
            "path": self.path or None,
            "line": self.line or None,
            "text": self.text or None,
            "count": self.count,
        }

    def one_line(self) -> str:
        """``507015 ACL_ERROR_RT_AICORE_EXCEPTION: meaning — fix`` (for check evidence)."""
        e = self.explanation
        if e is None:
            return f"{self.key}: {self.note}"
        name = f" {e.title}" if e.kind != "message" else ""
        return f"{self.key}{name}: {e.meaning} Fix: {e.fix}"


# -- recognising --------------------------------------------------------------------------------


def _torch_npu_entry(table: ErrorTable, sub: int, kind: int) -> Explanation | None:
    codes = table.torch_npu
    if kind not in codes.kinds:
        return None
    meaning, fix = codes.kinds[kind]
    sub_name, sub_meaning = codes.submodules.get(sub, (f"submodule {sub}", "unknown submodule"))
    return Explanation(
        f"ERR{sub:02d}{kind:03d}",
        "torch_npu",
        f"{sub_name} {meaning}",
        f"torch_npu ({sub_meaning})",
        f"torch_npu reported '{meaning}' from its {sub_name} part ({sub_meaning}).",
        "The lines before the [ERROR] line carry the cause.",
        fix,
        (codes.source,),
    )


def _acl_names(table: ErrorTable) -> dict[str, str]:
    return {e.title: code for code, e in table.codes.items() if e.kind == "acl"}


def find_in_line(line: str, table: ErrorTable, names: dict[str, str]) -> list[Finding]:
    """Every code and known message in one line of text, each once."""
    seen: dict[str, Finding] = {}
    for f in _candidates(line, table, names):
        seen.setdefault(f.key, f)
    return list(seen.values())


def _candidates(line: str, table: ErrorTable, names: dict[str, str]) -> Iterator[Finding]:
    for m in _ECODE_ANY.finditer(line):
        code = m.group(1)
        if code in table.codes:
            yield Finding(code, "cann", table.codes[code])
    for m in _ECODE_PRINTED.finditer(line):
        code = next(g for g in m.groups() if g)
        if code not in table.codes:
            yield unknown_code(code, table)
    # The slower patterns run only where their fixed words are.
    for m in _acl_matches(line):
        code = m.group(1)
        yield (
            Finding(code, "acl", table.codes.get(code)) if code in table.codes else unknown_code(code, table)
        )
    for m in _ACL_NAME.finditer(line) if "ACL_ERROR_" in line else ():
        code = names.get(m.group(1))
        if code is not None:
            yield Finding(code, "acl", table.codes[code])
    for m in _TORCH_NPU.finditer(line) if "ERR" in line else ():
        sub, kind = int(m.group(1)), int(m.group(2))
        entry = _torch_npu_entry(table, sub, kind)
        key = f"ERR{m.group(1)}{m.group(2)}"
        yield Finding(key, "torch_npu", entry) if entry else unknown_code(key, table)
    for msg in table.messages:
        assert msg.pattern is not None
        if _literal_of(msg.pattern) in line and msg.pattern.search(line):
            yield Finding(msg.key, "message", msg)


_ACL_WORDS = ("error code", "ret", "result", "failed:", "aclError", "error_code")  # _ACL's starts


def _acl_matches(line: str) -> Iterator[re.Match]:
    """``_ACL.finditer(line)``, tried only where one of its words starts (the pattern has no
    literal prefix the regex engine could skip to: it is 5x slower scanning every position)."""
    starts = set()
    for word in _ACL_WORDS:
        at = line.find(word)
        while at >= 0:
            starts.add(at)
            at = line.find(word, at + 1)
    end = 0
    for at in sorted(starts):
        m = _ACL.match(line, at) if at >= end else None
        if m is not None:
            end = m.end()
            yield m


_LITERALS: dict[str, str] = {}


def _literal_of(pattern: re.Pattern) -> str:
    """A text every match of ``pattern`` holds ("" if none is known: always searched)."""
    if pattern.pattern not in _LITERALS:
        plain = not pattern.flags & (re.IGNORECASE | re.VERBOSE)
        _LITERALS[pattern.pattern] = longest_literal(pattern.pattern) if plain else ""
    return _LITERALS[pattern.pattern]


def unknown_code(code: str, table: ErrorTable) -> Finding:
    """A well-formed code the table has no row for, with what its family says."""
    if code.isdigit():
        klass = table.acl_classes.get(int(code[0]))
        note = (
            f"not in the table; ACL codes starting with {code[0]} mean {klass}"
            if klass
            else "not in the table, and not in a documented ACL code class"
        )
        return Finding(code, "acl", None, note, table.acl_class_source)
    if code.startswith("ERR"):
        sub = int(code[3:5])
        name = table.torch_npu.submodules.get(sub, (f"submodule {sub}", ""))[0]
        return Finding(
            code,
            "torch_npu",
            None,
            f"not in the table; a torch_npu code from its {name} part",
            table.torch_npu.source,
        )
    family = table.component_of(code)
    if family:
        return Finding(
            code,
            "cann",
            None,
            f"not in the table; {code[:2]} codes come from {family[0]}: the lines "
            "after it in the log carry the details",
            family[1],
        )
    return Finding(code, "cann", None, "not in the table, and no known CANN code family")


def explain_text(text: str, table: ErrorTable | None = None) -> list[str]:
    """One line per distinct code or message found in ``text`` (for check evidence)."""
    table = table or error_table()
    names = _acl_names(table)
    seen: dict[str, Finding] = {}
    for line in text.splitlines():
        for f in find_in_line(line, table, names):
            seen.setdefault(f.key, f)
    return [f.one_line() for f in seen.values()]


# -- --explain ----------------------------------------------------------------------------------


def explain_arg(arg: str, table: ErrorTable | None = None) -> list[Finding]:
    """``--explain``'s answer: the code's row (or what its family says), a message id's row,
    or every code and message found in a pasted error message. UsageError when ``arg`` is
    none of those."""
    table = table or error_table()
    text = arg.strip()
    if not text:
        raise UsageError("--explain needs a code (507015, EI0006, ERR00100) or an error message")
    upper = text.upper()
    names = _acl_names(table)
    if _CODE_ARG.match(upper):
        if upper.startswith("ERR"):
            entry = _torch_npu_entry(table, int(upper[3:5]), int(upper[5:]))
            return [Finding(upper, "torch_npu", entry)] if entry else [unknown_code(upper, table)]
        if upper in table.codes:
            return [Finding(upper, table.codes[upper].kind, table.codes[upper])]
        return [unknown_code(upper, table)]
    if upper in names:
        code = names[upper]
        return [Finding(code, "acl", table.codes[code])]
    message = table.message(text)
    if message is not None:
        return [Finding(message.key, "message", message)]
    found: dict[str, Finding] = {}
    for line in text.splitlines() or [text]:
        for f in find_in_line(line, table, names):
            found.setdefault(f.key, f)
    if not found:
        raise UsageError(
            f"{escape(text[:80])!s}: not an error code (507015, EI0006, ERR00100) "
            "and no known error message in it"
        )
    return list(found.values())


# -- --log --------------------------------------------------------------------------------------

CHUNK = 4 << 20  # bytes read at a time
WINDOW = 1024  # characters either side of a trigger looked at in a long line
MAX_FINDINGS = 500  # distinct findings kept per scan (then counted in ``dropped``)
CACHED_WINDOWS = 4096  # distinct short lines whose findings are remembered
# Literals (or literal-led regexes) every finding's text holds: found with fast substring
# search, so most of a log is never looked at by the per-line patterns.
_TRIGGER_RES = (
    re.compile(r"E[0-9A-Z]\d{4}"),
    re.compile(r"ERR\d{5}"),
    re.compile(r"ret(?:code)?\s*[=:]"),
    re.compile(r"result\s*="),
)
_TRIGGER_WORDS = ("error code", "failed:", "aclError", "error_code", "ACL_ERROR_")


@dataclass
class LogScan:
    paths: list[str]
    findings: list[Finding] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    truncated: bool = False
    dropped: int = 0  # lines holding findings beyond MAX_FINDINGS distinct ones
    errors: list[dict[str, str]] = field(default_factory=list)  # files that could not be read


def open_log(path: str) -> IO[bytes]:
    """A binary stream of a regular file (or stdin for ``-``); UsageError for anything else."""
    if path == "-":
        return sys.stdin.buffer
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{escape(path)}: cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(
                f"{escape(path)}: not a regular file (a folder, FIFO, device or "
                "socket); give a log file or - for stdin"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def scan_logs(paths: Iterable[str], table: ErrorTable | None = None, limit: int = LOG_LIMIT) -> LogScan:
    """Every code and known message in the logs, each once per file (its first line, and the
    number of lines holding it)."""
    table = table or error_table()
    scanner = _Scanner(table)
    result = LogScan([str(p) for p in paths])
    streams: list[IO[bytes]] = []
    try:
        for path in result.paths:  # every path is checked before any is read
            streams.append(open_log(path))
        for path, stream in zip(result.paths, streams):
            try:
                scanner.scan(stream, path, result, limit)
            except OSError as exc:
                result.errors.append({"path": path, "message": exc.strerror or str(exc)})
    finally:
        for stream in streams:
            if stream is not sys.stdin.buffer:
                stream.close()
    result.findings = sorted(scanner.found.values(), key=lambda f: (result.paths.index(f.path), f.line))
    return result


class _Scanner:
    """Streams a log in chunks; only the text around a trigger is matched exactly."""

    def __init__(self, table: ErrorTable) -> None:
        self.table = table
        self.names = _acl_names(table)
        self.words = trigger_words(table)
        self.found: dict[tuple[str, str], Finding] = {}
        self.line: tuple[str, int] = ("", 0)  # the line whose findings line_keys holds
        self.line_keys: set[str] = set()
        self.cache: dict[str, list[Finding]] = {}

    def scan(self, stream: IO[bytes], path: str, result: LogScan, limit: int) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        line, carry, scanned, text = 1, "", 0, ""
        while True:
            want = min(CHUNK, limit - scanned)
            raw = stream.read(want) if want > 0 else b""
            scanned += len(raw)
            text = carry + decoder.decode(raw, final=not raw)
            if not raw or scanned >= limit:
                self._block(text, path, line, result)
                line += text.count("\n")
                if raw and _more(stream):
                    result.truncated = True
                break
            cut = text.rfind("\n")
            if cut < 0 and len(text) < CHUNK:
                carry = text  # part of a line: wait for its end
                continue
            block, carry = (text, "") if cut < 0 else (text[: cut + 1], text[cut + 1 :])
            self._block(block, path, line, result)
            line += block.count("\n")
        ends_open = bool(text) and not text.endswith("\n")
        result.lines += line - 1 + (1 if ends_open else 0)
        result.bytes += scanned

    def _block(self, block: str, path: str, first_line: int, result: LogScan) -> None:
        """Each line with triggers is matched once, over the union of the windows around
        its triggers (a long line holding a million codes is read once, not once per code);
        a line seen before (logs repeat) reuses its findings."""
        line_no, counted_to = first_line, 0
        triggers = sorted(set(self._triggers(block)))
        i = 0
        while i < len(triggers):
            pos = triggers[i]
            start = block.rfind("\n", 0, pos) + 1
            end = block.find("\n", pos)
            end = len(block) if end < 0 else end
            line_no += block.count("\n", counted_to, start)
            counted_to = start
            spans: list[list[int]] = []
            while i < len(triggers) and triggers[i] < end:
                lo, hi = max(start, triggers[i] - WINDOW), min(end, triggers[i] + WINDOW)
                if spans and lo <= spans[-1][1]:
                    spans[-1][1] = max(spans[-1][1], hi)
                else:
                    spans.append([lo, hi])
                i += 1
            shown = (block, start, end, pos)
            if (path, line_no) != self.line:
                self.line, self.line_keys = (path, line_no), set()
            for lo, hi in spans:
                for f in self._find(block[lo:hi]):
                    self._record(f, path, line_no, shown, result)

    def _find(self, window: str) -> list[Finding]:
        """``find_in_line``, remembered for the last few thousand distinct windows."""
        found = self.cache.get(window)
        if found is None:
            found = find_in_line(window, self.table, self.names)
            if len(self.cache) >= CACHED_WINDOWS:
                self.cache.clear()
            if len(window) <= SHOWN * 4:
                self.cache[window] = found
        return found

    def _triggers(self, block: str) -> Iterator[int]:
        for word in self.words:
            pos = block.find(word)
            while pos >= 0:
                yield pos
                pos = block.find(word, pos + 1)
        for pattern in _TRIGGER_RES:
            for m in pattern.finditer(block):
                yield m.start()

    def _record(
        self, f: Finding, path: str, line: int, shown: tuple[str, int, int, int], result: LogScan
    ) -> None:
        if f.key in self.line_keys:
            return  # once per line (a line longer than a read is met in two blocks)
        self.line_keys.add(f.key)
        key = (f.key, path)
        if key in self.found:
            self.found[key].count += 1
        elif len(self.found) >= MAX_FINDINGS:
            result.dropped += 1
        else:
            self.found[key] = replace(f, line=line, path=path, text=_shown(f.key, *shown))


def _shown(key: str, block: str, start: int, end: int, first: int) -> str:
    """The line holding ``key``; of a long line, the part around the code (or around the
    line's first trigger, for a message)."""
    if end - start > SHOWN * 4:
        at = block.find(key, start, end)
        at = first if at < 0 else at
        start, end = max(start, at - SHOWN // 2), min(end, at + SHOWN // 2)
    return block[start:end].strip()[:SHOWN]


def _more(stream: IO[bytes]) -> bool:
    """Is there anything after the limit? (One more byte read, no more.)"""
    try:
        return bool(stream.read(1))
    except OSError:
        return False


def trigger_words(table: ErrorTable) -> tuple[str, ...]:
    """The literal each message pattern must contain (its longest literal run) and the fixed
    words of the ACL code contexts; a word holding another word is dropped."""
    words = set(_TRIGGER_WORDS)
    for msg in table.messages:
        assert msg.pattern is not None
        words.add(longest_literal(msg.pattern.pattern) or msg.pattern.pattern)
    return tuple(w for w in sorted(words) if not any(o != w and o in w for o in words))


def longest_literal(pattern: str) -> str:
    """The longest run of literal characters at the top level of a regular expression."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # Python 3.10
        import sre_parse  # type: ignore[no-redef, unused-ignore]
    best, run = "", []
    for op, arg in sre_parse.parse(pattern):
        if str(op) == "LITERAL":
            run.append(chr(arg))
            continue
        best = max(best, "".join(run), key=len)
        run = []
    return max(best, "".join(run), key=len)


# -- rendering ---------------------------------------------------------------------------------


def render_findings(findings: list[Finding], header: str = "") -> str:
    lines = [header] if header else []
    for f in findings:
        e = f.explanation
        where = f"{escape(f.path)}:{f.line}: " if f.line else ""
        times = f" (x{f.count})" if f.count > 1 else ""
        if e is None:
            lines.append(f"{where}{f.key}{times}: {f.note}")
            if f.note_source:
                lines.append(f"    source:  {f.note_source.cite()}")
        else:
            title = e.title if e.kind != "message" else "message"
            comp = f" ({e.component})" if e.component else ""
            lines.append(f"{where}{f.key} {title}{comp}{times}")
        if f.text:
            lines.append(f"    | {escape(f.text)}")
        if e is not None:
            lines.append(f"    meaning: {e.meaning}")
            lines.append(f"    cause:   {e.cause}")
            lines.append(f"    fix:     {e.fix}")
            lines.append(f"    sources: {', '.join(s.cite() for s in e.sources)}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def log_json(scan: LogScan) -> dict[str, Any]:
    return {
        "logs": scan.paths,
        "lines": scan.lines,
        "bytes": scan.bytes,
        "truncated": scan.truncated,
        "dropped": scan.dropped,
        "errors": scan.errors,
        "findings": [f.to_json() for f in scan.findings],
        "summary": {
            "findings": len(scan.findings),
            "known": sum(f.explanation is not None for f in scan.findings),
        },
    }


def explain_json(arg: str, findings: list[Finding]) -> dict[str, Any]:
    return {
        "explain": arg,
        "found": all(f.explanation is not None for f in findings),
        "findings": [f.to_json() for f in findings],
    }
