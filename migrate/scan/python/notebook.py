"""Jupyter notebooks: scan each code cell as Python; report positions in the .ipynb file.

IPython syntax (``%magic``, ``!shell``, ``%%cell`` magics) is blanked before parsing.
Findings point at the notebook line that holds the source line (nbformat writes one
source line per JSON line). Notebooks are not rewritten, so findings carry no fix.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from migrate.core.findings import Finding, LineIndex

_MAGIC = re.compile(r"^\s*(%|!|\?)")


class NotebookError(Exception):
    pass


def code_cells(raw: str) -> list[tuple[int, list[str]]]:
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise NotebookError("not a notebook: no cells")
    cells = []
    for number, cell in enumerate(doc["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", [])
        lines = source.splitlines(keepends=True) if isinstance(source, str) else list(source)
        cells.append((number, [str(x) for x in lines]))
    return cells


def scan_notebook(raw: str, rel: str, rules: Any, scan) -> list[Finding]:
    """``scan(text, rel, rules)`` scans Python text (raising on syntax errors); ``rules`` is
    what it takes (the file's Plan)."""
    index = LineIndex(raw)
    out: list[Finding] = []
    cursor = 0
    for number, lines in code_cells(raw):
        if lines and lines[0].lstrip().startswith("%%"):
            continue  # a cell magic: the cell is not Python
        text = "".join("\n" if _MAGIC.match(x) else x for x in lines)
        raw_lines = []
        for x in lines:
            pos = raw.find(json.dumps(x)[1:-1], cursor) if x.strip() else -1
            if pos != -1:
                cursor = pos
            raw_lines.append(index.position(pos)[0] if pos != -1 else None)
        try:
            found = scan(text, rel, rules)
        except Exception:
            continue  # cells with IPython-only syntax we do not know
        for f in found:
            line = raw_lines[f.line - 1] if f.line - 1 < len(raw_lines) else None
            out.append(replace(
                f, line=line or 1, end_line=line or 1, fix=None,
                category="perf" if f.category == "perf" else "manual",
                message=f"{f.message} [cell {number}, line {f.line}]"))
    return out
