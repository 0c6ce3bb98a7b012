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
lines longer than 64 KiB in pieces; each finding is reported once, with its first line, the
line's text and how often it occurred. Nothing read is executed or written anywhere.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.doctor.tables import ErrorTable, Explanation, Source, error_table

LOG_LIMIT = 2 << 30  # bytes scanned per log (then: truncated)
PIECE = 64 * 1024  # a longer line is read in pieces of this size
SHOWN = 240  # characters of a log line shown

_ECODE_ANY = re.compile(r"(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4})(?![0-9A-Za-z_])")
_ECODE_PRINTED = re.compile(
    r"(?:(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4}):|\(([EW][0-9A-Z]\d{4})\)"
    r"|ErrorCode=([EW][0-9A-Z]\d{4}))"
)
_ACL = re.compile(
    r"(?:error code is|error code[:=]|\bret(?:code)?\s*[=:]|\bresult\s*=|"
    r"\bfailed:|\baclError\b[^0-9\n]{0,20}|\berror_code\s*[=:])\s*(\d{6})(?!\d)",
    re.IGNORECASE,
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
    for m in _ACL.finditer(line):
        code = m.group(1)
        yield (
            Finding(code, "acl", table.codes.get(code)) if code in table.codes else unknown_code(code, table)
        )
    for m in _ACL_NAME.finditer(line):
        code = names.get(m.group(1))
        if code is not None:
            yield Finding(code, "acl", table.codes[code])
    for m in _TORCH_NPU.finditer(line):
        sub, kind = int(m.group(1)), int(m.group(2))
        entry = _torch_npu_entry(table, sub, kind)
        key = f"ERR{m.group(1)}{m.group(2)}"
        yield Finding(key, "torch_npu", entry) if entry else unknown_code(key, table)
    for msg in table.messages:
        assert msg.pattern is not None
        if msg.pattern.search(line):
            yield Finding(msg.key, "message", msg)


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


@dataclass
class LogScan:
    paths: list[str]
    findings: list[Finding] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    truncated: bool = False
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
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


def scan_logs(paths: Iterable[str], table: ErrorTable | None = None, limit: int = LOG_LIMIT) -> LogScan:
    """Every code and known message in the logs, each once (first line, count)."""
    table = table or error_table()
    names = _acl_names(table)
    quick = _prefilter(table)
    result = LogScan([str(p) for p in paths])
    found: dict[tuple[str, str], Finding] = {}
    for path in result.paths:
        stream = open_log(path)  # UsageError before anything is reported
        try:
            _scan_stream(stream, path, table, names, quick, found, result, limit)
        except OSError as exc:
            result.errors.append({"path": path, "message": exc.strerror or str(exc)})
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    result.findings = sorted(found.values(), key=lambda f: (result.paths.index(f.path), f.line))
    return result


def _scan_stream(
    stream: IO[bytes],
    path: str,
    table: ErrorTable,
    names: dict[str, str],
    quick: re.Pattern,
    found: dict[tuple[str, str], Finding],
    result: LogScan,
    limit: int,
) -> None:
    number, scanned = 0, 0
    at_line_start = True
    while True:
        if scanned >= limit:
            result.truncated = True
            break
        piece = stream.readline(min(PIECE, limit - scanned))
        if not piece:
            break
        scanned += len(piece)
        if at_line_start:
            number += 1
        at_line_start = piece.endswith(b"\n")
        text = piece.decode("utf-8", "replace")
        if not quick.search(text):
            continue
        for f in find_in_line(text, table, names):
            key = (f.key, path)
            if key in found:
                found[key].count += 1
                continue
            f.line, f.path = number, path
            f.text = text.strip()[:SHOWN]
            found[key] = f
    result.lines += number
    result.bytes += scanned


def _prefilter(table: ErrorTable) -> re.Pattern:
    """One regex that every line holding a finding matches (most lines hold none)."""
    parts = [_ECODE_ANY.pattern, _ACL.pattern, _ACL_NAME.pattern, _TORCH_NPU.pattern]
    parts += [m.pattern.pattern for m in table.messages if m.pattern is not None]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


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
