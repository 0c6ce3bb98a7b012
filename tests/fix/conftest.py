"""Test doubles for the apply tests: a tiny token-based scanner standing in for the engine
where a test is about the applier itself (choice, merging, imports, IO), not the rules."""

from __future__ import annotations

import io
import re
import tokenize

from migrate.core.findings import Edit, Finding, Fix, LineIndex

_CUDA = re.compile(r"\btorch\.cuda\.")


def make_finding(
    text: str,
    start: int,
    end: int,
    content: str,
    rule: str = "MIG101",
    imports=(),
    applicability="safe",
    category="auto",
) -> Finding:
    lines = LineIndex(text)
    line, col = lines.position(start)
    end_line, end_col = lines.position(end)
    fix = Fix(applicability, f"replace with {content!r}", [Edit(start, end, content)], list(imports))
    return Finding(rule, "test-rule", "t.py", line, col, end_line, end_col, "msg", category, fix)


def token_scan(text: str, rel: str = "t.py", kind: str = "python", rules=None) -> list[Finding]:
    """`torch.cuda.` -> `torch.npu.` (+ `import math`, an import the applier always adds where
    missing) in code tokens only."""
    lines = LineIndex(text)
    out = []
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for i, tok in enumerate(toks[:-2]):
        a, b = toks[i + 1], toks[i + 2]
        if (
            tok.string == "torch"
            and a.string == "."
            and b.string == "cuda"
            and (i == 0 or toks[i - 1].string != ".")
        ):
            start = lines.offset(b.start[0], b.start[1])
            out.append(make_finding(text, start, start + 4, "npu", imports=["import math"]))
    return out
