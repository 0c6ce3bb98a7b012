"""How the scan reads each file kind: the one dispatch from a file's kind to its findings.

    READERS[FILE_KINDS[kind].reader](ruleset, path, rel, kind, data, target, devices, checked)
        -> (findings, problem or None)          for a file's bytes (the scan workers;
                                                ``checked``: may_match passed it already)
    scan_text(text, rel, kind, rules, target, devices) -> list[Finding]
        for a decoded Python or text file (apply's re-scans, the tests)

``devices`` (migrate/scan/project/file_devices.py FileDevices) is the project around a
Python file: the device helpers its portable fixes route through (None: a file on its own).

Every reader named in the file-kind table (migrate/core/filekinds.py) has a function here:
a missing one fails at import. Python files and notebooks are decoded with PEP 263 cookies
(Python only) and BOMs, and skipped when the byte prefilter finds no token of the selected
rules; text files are matched by the text engine (then CI jobs on NVIDIA runners and the
port target settle their fixes); ONNX models go to the census (they are never decoded).
A file that cannot be scanned raises FileProblem (an entry in the report's errors).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from migrate.core.errors import FileProblem
from migrate.core.fileio import decode, prefilter_bytes
from migrate.core.filekinds import FILE_KINDS
from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.ruleset import RuleSet

Problem = str | None
Reader = Callable[..., tuple[list[Finding], Problem]]


def scan_text(
    text: str,
    rel: str,
    kind: str,
    rules: RuleSet | Sequence[Rule],
    target: str = DEFAULT_TARGET,
    devices=None,
) -> list[Finding]:
    """Findings of ``rules`` for one decoded Python or text file, with fixes for ``target``
    (pass a RuleSet when scanning many texts: a list of rules is compiled on every call).
    Raises FileProblem for unparsable input."""
    ruleset = RuleSet.of(rules)
    reader = FILE_KINDS[kind].reader if kind in FILE_KINDS else "text"
    if reader == "python":
        return ruleset.kept(_python_text(ruleset, text, rel, target, devices))
    if reader == "text":
        return ruleset.kept(_text_text(ruleset, text, rel, kind, target))
    return []  # notebooks and models are read from their bytes (READERS)


def _python_text(ruleset: RuleSet, text: str, rel: str, target: str, devices=None) -> list[Finding]:
    from migrate.scan.python.scanner import ParseError, scan_python

    try:
        return scan_python(text, rel, ruleset.python(rel), target, devices)
    except ParseError as exc:
        raise FileProblem(str(exc)) from None


def _text_text(ruleset: RuleSet, text: str, rel: str, kind: str, target: str) -> list[Finding]:
    from migrate.scan.text.scanner import scan_text_file
    from migrate.scan.text.targets import retarget_text

    return retarget_text(scan_text_file(text, rel, kind, ruleset), text, rel, kind, target)


def _prefiltered(ruleset: RuleSet, rel: str, source, code: bool = False, target: str | None = None) -> bool:
    """Does the decoded file hold a token of the selected Python rules (with ``code``: where
    its kind reads, never in comments and docstrings; with ``target``: of a kind that reports
    under it)?"""
    prefilter = ruleset.prefilter(rel, target)
    return prefilter is None or prefilter.search(prefilter_bytes(source), code)


# the readers whose findings depend on the project around the file (its portable fixes)
NEEDS_PROJECT = frozenset({"python", "notebook"})


def may_match(ruleset: RuleSet, path: str, rel: str, kind: str, data: bytes, target: str) -> bool:
    """For a file whose reader needs the project: can it have a finding (does it pass the
    reader's prefilter)? A file that cannot does not wait for the project to be known.
    Raises SourceError for bytes that do not decode, FileProblem for a malformed notebook."""
    if FILE_KINDS[kind].reader == "python":
        return _prefiltered(ruleset, rel, decode(data, python=True, path=path), code=True, target=target)
    source = decode(data, python=False, path=path)
    _notebook_cells(source.text)
    return _prefiltered(ruleset, rel, source)


def _notebook_cells(text: str) -> None:
    """FileProblem when ``text`` is no nbformat document (before the prefilter: a notebook
    whose ``cells`` is not a list holds no CUDA token either, and is not a clean file)."""
    from migrate.scan.python.notebook import NotebookError, code_cells

    try:
        code_cells(text)
    except NotebookError as exc:
        raise FileProblem(str(exc)) from None


def read_python(
    ruleset: RuleSet, path: str, rel: str, kind: str, data: bytes, target: str, devices=None, checked=False
) -> tuple[list[Finding], Problem]:
    source = decode(data, python=True, path=path)
    if not checked and not _prefiltered(ruleset, rel, source, code=True, target=target):
        return [], None
    return ruleset.kept(_python_text(ruleset, source.text, rel, target, devices)), None


def read_notebook(
    ruleset: RuleSet, path: str, rel: str, kind: str, data: bytes, target: str, devices=None, checked=False
) -> tuple[list[Finding], Problem]:
    from migrate.scan.python.notebook import NotebookError, scan_notebook
    from migrate.scan.python.scanner import scan_python

    source = decode(data, python=False, path=path)
    if not checked:
        _notebook_cells(source.text)
        if not _prefiltered(ruleset, rel, source):
            return [], None
    problems: list[str] = []  # cells it could not scan: they may hide findings
    try:
        found = scan_notebook(
            source.text,
            rel,
            ruleset.python(rel),
            lambda t, r, plan: scan_python(t, r, plan, target, devices),
            problems,
        )
    except NotebookError as exc:
        raise FileProblem(str(exc)) from None
    return ruleset.kept(found), "; ".join(problems)[:500] or None


def read_text(
    ruleset: RuleSet, path: str, rel: str, kind: str, data: bytes, target: str, devices=None, checked=False
) -> tuple[list[Finding], Problem]:
    source = decode(data, python=False, path=path)
    findings = ruleset.kept(_text_text(ruleset, source.text, rel, kind, target))
    return findings, _toml_problem(source.text) if kind == "pyproject" else None


def read_onnx(
    ruleset: RuleSet, path: str, rel: str, kind: str, data: bytes, target: str, devices=None, checked=False
) -> tuple[list[Finding], Problem]:
    findings: list[Finding] = []
    for spec, group in ruleset.onnx().groups:
        found, errors = spec.run(Path(path), rel, list(group))
        if errors:
            raise FileProblem(errors[0].message)
        findings += found
    return ruleset.kept(findings), None


def _toml_problem(text: str) -> str | None:
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"invalid TOML: {exc}"
    except RecursionError:
        return "invalid TOML: nesting too deep"
    except ValueError as exc:  # an integer past Python's digit limit
        return f"invalid TOML: {' '.join(str(exc).split())[:200]}"
    return None


READERS: dict[str, Reader] = {
    "python": read_python,
    "notebook": read_notebook,
    "text": read_text,
    "onnx": read_onnx,
}
_MISSING = ({k.reader for k in FILE_KINDS.values()} | NEEDS_PROJECT) - set(READERS)
if _MISSING:
    raise RuntimeError(f"file kinds name readers nobody defines: {sorted(_MISSING)}")
