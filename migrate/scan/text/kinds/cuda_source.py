"""Kind ``cuda-source``: a ``.cu``/``.cuh`` file is one finding (a kernel to port by hand),
with its line and ``__global__`` kernel counts (``{lines}``, ``{kernels}`` in the message)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate.core.findings import Finding
from migrate.core.kinds import Token, rule_kind
from migrate.core.rules import Rule
from migrate.scan.text.textfile import TextFile

_KERNEL = re.compile(r"\b__global__\b")
_C_COMMENT_START = re.compile(r"//|/\*")


def _tokens(rule: Rule, rules) -> set[Token]:
    return set()  # every CUDA source file is a finding: always run


@rule_kind("cuda-source", engine="text", params={}, tokens=_tokens)
def scan_cuda_source(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    findings = []
    for rule in rules:
        code = _strip_c_comments(tf.text)
        if not code.strip():
            continue  # empty or comments only: nothing to port
        lines = tf.text.count("\n") + (0 if tf.text.endswith("\n") or not tf.text else 1)
        values = {"lines": lines, "kernels": len(_KERNEL.findall(code))}
        first_line_end = len(tf.index.line_text(1))
        f = tf.finding(rule, 0, first_line_end, values)
        if f is not None:
            findings.append(f)
    return findings


def _strip_c_comments(text: str) -> str:
    """Text without // and /* */ comments, in linear time (an unclosed /* runs to the end)."""
    out, pos = [], 0
    while (m := _C_COMMENT_START.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        closer = "\n" if m.group() == "//" else "*/"
        end = text.find(closer, m.end())
        if end < 0:
            return "".join(out)
        out.append(" ")
        pos = end + len(closer)
    out.append(text[pos:])
    return "".join(out)
