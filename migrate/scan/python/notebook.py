"""Jupyter notebooks: scan each code cell as Python; report positions in the .ipynb file.

IPython syntax (``%magic``, ``!shell``, ``%%cell`` magics) is blanked before parsing.
Findings point at the notebook line that holds the source line (nbformat writes one
source line per JSON line). Notebooks are not rewritten, so findings carry no fix.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
from dataclasses import replace
from typing import Any

from migrate.core.findings import Finding, LineIndex

_MAGIC = re.compile(r"^\s*(%|!|\?)")


class NotebookError(Exception):
    pass


def code_cells(raw: str) -> list[tuple[int, list[str]]]:
    """The code cells (number, source lines) of an nbformat document; NotebookError when
    ``raw`` is not one (checked before any token prefilter: a malformed notebook is a file
    error, never a clean file)."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}") from None
    if not isinstance(doc, dict):
        raise NotebookError("not a notebook: not a JSON object")
    if "cells" not in doc:
        raise NotebookError("not a notebook: no cells")
    if not isinstance(doc["cells"], list):
        raise NotebookError("not a notebook: cells is not a list")
    cells = []
    for number, cell in enumerate(doc["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", [])
        if isinstance(source, str):
            lines = source.splitlines(keepends=True)
        elif isinstance(source, list) and all(isinstance(x, str) for x in source):
            lines = list(source)
        else:  # nbformat: a string or a list of strings; anything else hides code
            raise NotebookError(f"not a notebook: cell {number} source is not text")
        cells.append((number, lines))
    return cells


# IPython syntax that is not Python: line magics and shell escapes (also assigned:
# ``files = !ls``, ``t = %timeit -o f()``) and help (``obj?``, ``??obj``).
_ASSIGNED_MAGIC = re.compile(r"^\s*[\w.,\s]+=\s*[!%]")
_HELP = re.compile(r"^\s*[\w.]*\?\??\s*$")


def _ipython(line: str) -> bool:
    return bool(_MAGIC.match(line) or _ASSIGNED_MAGIC.match(line) or _HELP.match(line))


def scan_notebook(raw: str, rel: str, rules: Any, scan, problems: list[str] | None = None) -> list[Finding]:
    """``scan(text, rel, rules)`` scans Python text (raising on syntax errors); ``rules`` is
    what it takes (the file's Plan).

    Cells run in one namespace, so they are scanned as one module (``import torch`` in the
    first cell binds ``torch`` in the last). When that does not parse, each cell is scanned
    after the imports of the cells before it, and a cell that cannot be scanned (it may hide
    findings) is named in ``problems``: the file then counts as an error, as a Python file
    that does not parse does."""
    index = LineIndex(raw)
    cells = []  # (number, text, notebook line of each cell line)
    cursor = 0
    for number, lines in code_cells(raw):
        if lines and lines[0].lstrip().startswith("%%"):
            continue  # a cell magic: the cell is not Python
        text = "".join("\n" if _ipython(x) else x for x in lines)
        if text and not text.endswith(("\n", "\r")):
            text += "\n"
        raw_lines = []
        for x in lines:
            pos = raw.find(json.dumps(x)[1:-1], cursor) if x.strip() else -1
            if pos != -1:
                cursor = pos
            raw_lines.append(index.position(pos)[0] if pos != -1 else None)
        cells.append((number, text, raw_lines))
    try:
        found = scan("".join(text for _, text, _ in cells), rel, rules)
    except Exception:  # noqa: BLE001 - some cell does not parse: one cell at a time
        return _cell_by_cell(cells, rel, rules, scan, problems)
    starts, first = [], 1
    for _, text, _ in cells:
        starts.append(first)
        first += _lines(text)
    out = []
    for f in found:
        k = bisect.bisect_right(starts, f.line) - 1
        if k >= 0:
            out.append(_placed(f, cells[k], f.line - starts[k] + 1))
    return out


def _cell_by_cell(cells, rel: str, rules, scan, problems: list[str] | None) -> list[Finding]:
    out: list[Finding] = []
    imports = ""  # the import statements of the cells before: their names are bound
    for cell in cells:
        number, text, _ = cell
        shift = _lines(imports)
        try:
            found = scan(imports + text, rel, rules)
        except Exception as exc:  # noqa: BLE001 - a syntax error, or IPython syntax we do not know
            if problems is not None:
                why = str(exc).strip().splitlines()
                problems.append(f"cell {number} not scanned ({why[0] if why else type(exc).__name__})")
            continue
        out += [_placed(f, cell, f.line - shift) for f in found if f.line > shift]
        imports += _imports_of(text)
    return out


def _lines(text: str) -> int:
    """Lines of a text that ends with a line break, as ``ast`` counts them."""
    return len(_BREAKS.findall(text))


_BREAKS = re.compile(r"\r\n?|\n")


def _imports_of(text: str) -> str:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    return "".join(
        ast.unparse(node) + "\n" for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
    )


def _placed(f: Finding, cell, local: int) -> Finding:
    """``f`` (found at line ``local`` of the cell) at its line in the notebook file."""
    number, _, raw_lines = cell
    line = raw_lines[local - 1] if 0 < local <= len(raw_lines) else None
    head = f.decision - f.line + local if f.decision else 0  # the decision's line in the cell
    return replace(
        f,
        line=line or 1,
        end_line=line or 1,
        decision=raw_lines[head - 1] if 0 < head <= len(raw_lines) else 0,
        fix=None,
        category="perf" if f.category == "perf" else "manual",
        message=f"{f.message} [cell {number}, line {local}]",
    )
