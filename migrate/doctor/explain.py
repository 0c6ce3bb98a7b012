"""What an error code or message means: ``migrate doctor --explain CODE`` and ``--log FILE``.

Codes are recognised where CANN, ACL and torch_npu print them, so a timestamp or a tensor
value that happens to have six digits is never taken for one:

* CANN error codes (``EE9999``, ``EI0006``, ``E19010``): as whole tokens when the table knows
  them; an unknown one only in the forms CANN prints (``EZ1234:``, ``(EL0005)``);
* ACL, runtime and aclnn return codes (six digits; ``data/return_codes.yaml`` holds every
  code of their headers): after ``error code is`` (``error code is :``), ``ret=``,
  ``retcode:``, ``result =``, ``failed:``, ``aclError``, ``aclnnStatus=``; and their names
  (``ACL_ERROR_RT_AICORE_EXCEPTION``, ``ACLNN_ERR_INNER_FIND_KERNEL_ERROR``);
* HCCL's ``HcclResult`` codes in torch_npu's ``HCCL function error: <call>, error code is N``,
  and their names (``HCCL_E_UNAVAIL``);
* torch_npu's ``ERRxxyyy SUBMODULE`` codes;
* the messages of ``data/errors.yaml`` (regular expressions).

``--log FILE`` reads logs with the same recognisers (``logscan.py``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.doctor.tables import ErrorTable, Explanation, Source, error_table

SHOWN = 240  # characters of a log line shown

_ECODE_ANY = re.compile(r"(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4})(?![0-9A-Za-z_])")
_ECODE_PRINTED = re.compile(
    r"(?:(?<![0-9A-Za-z_])([EW][0-9A-Z]\d{4}):|\(([EW][0-9A-Z]\d{4})\)"
    r"|ErrorCode=([EW][0-9A-Z]\d{4}))"
)
_ACL = re.compile(
    r"(?:error code is\s*:?|error code[:=]|\bret(?:code)?\s*[=:]|\bresult\s*=|"
    r"\bfailed:|\baclError\b[^0-9\n]{0,20}|\berror_code\s*[=:]|\baclnnStatus\s*[=:])\s*(\d{6})(?!\d)"
)
_ACL_NAME = re.compile(r"\b((?:ACL_ERROR|ACLNN_ERR)_[A-Z0-9_]+)\b")
# torch_npu's HCCL_CHECK_ERROR: "HCCL function error: <call>, error code is <HcclResult>"
_HCCL_CALL = re.compile(r"HCCL function error: .{0,600}?, error code is (\d{1,4})(?!\d)")
_HCCL_NAME = re.compile(r"\b(HCCL_E_[A-Z_]+)\b")
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


def acl_names(table: ErrorTable) -> dict[str, str]:
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
    for m in _ACL_NAME.finditer(line) if "ACL" in line else ():
        code = names.get(m.group(1))
        if code is not None:
            yield Finding(code, "acl", table.codes[code])
    if "HCCL" in line:
        yield from _hccl(line, table)
    for m in _TORCH_NPU.finditer(line) if "ERR" in line else ():
        sub, kind = int(m.group(1)), int(m.group(2))
        entry = _torch_npu_entry(table, sub, kind)
        key = f"ERR{m.group(1)}{m.group(2)}"
        yield Finding(key, "torch_npu", entry) if entry else unknown_code(key, table)
    for msg in table.messages:
        assert msg.pattern is not None
        if _literal_of(msg.pattern) in line and msg.pattern.search(line):
            yield Finding(msg.key, "message", msg)


def _hccl(line: str, table: ErrorTable) -> Iterator[Finding]:
    values = table.returns.hccl if table.returns else {}
    for m in _HCCL_CALL.finditer(line):
        name = values.get(int(m.group(1)))
        if name is not None:
            yield Finding(name, "hccl", table.codes[name])
    for m in _HCCL_NAME.finditer(line):
        if m.group(1) in table.codes:
            yield Finding(m.group(1), "hccl", table.codes[m.group(1)])


_ACL_WORDS = (
    "error code",
    "ret",
    "result",
    "failed:",
    "aclError",
    "error_code",
    "aclnnStatus",
)  # _ACL's starts


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
    family = table.returns.family_of(code) if table.returns and code.isdigit() else None
    if family is not None:
        return Finding(
            code,
            "acl",
            None,
            f"not in the table; of the {family.component} family {family.id}: {family.cause}",
            family.source,
        )
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
    names = acl_names(table)
    seen: dict[str, Finding] = {}
    for line in text.splitlines():
        for f in find_in_line(line, table, names):
            seen.setdefault(f.key, f)
    return [f.one_line() for f in seen.values()]


# -- --explain ----------------------------------------------------------------------------------


def ascii_digits(text: str) -> str:
    """``text`` in NFKC (full-width ``５０７０１５`` and ``ＥＩ０００６`` become ASCII), with
    every other decimal digit (Arabic-Indic ``٥``, Persian ``۵``, Thai, ...) replaced by its
    ASCII digit: a code is recognised whatever digits it was typed in."""
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)


def explain_arg(arg: str, table: ErrorTable | None = None) -> list[Finding]:
    """``--explain``'s answer: the code's row (or what its family says), a message id's row,
    or every code and message found in a pasted error message (digits of any script read as
    ASCII, ``ascii_digits``). UsageError when ``arg`` is none of those."""
    table = table or error_table()
    text = ascii_digits(arg).strip()
    if not text:
        raise UsageError("--explain needs a code (507015, EI0006, ERR00100) or an error message")
    upper = text.upper()
    names = acl_names(table)
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
    if upper in table.codes and table.codes[upper].kind == "hccl":
        return [Finding(upper, "hccl", table.codes[upper])]
    message = table.message(text)
    if message is not None:
        return [Finding(message.key, "message", message)]
    found: dict[str, Finding] = {}
    for line in text.splitlines() or [text]:
        for f in find_in_line(line, table, names):
            found.setdefault(f.key, f)
    if not found:
        raise UsageError(
            f"{escape(arg.strip()[:80])!s}: not an error code (507015, EI0006, ERR00100) "
            "and no known error message in it"
        )
    return list(found.values())


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


def explain_json(arg: str, findings: list[Finding]) -> dict[str, Any]:
    return {
        "explain": arg,
        "found": all(f.explanation is not None for f in findings),
        "findings": [f.to_json() for f in findings],
    }
