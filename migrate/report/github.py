"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding.

Escaping follows the Actions toolkit (``@actions/core``, command.ts): in the message,
``%`` -> ``%25``, CR -> ``%0D``, LF -> ``%0A``; in property values additionally
``:`` -> ``%3A`` and ``,`` -> ``%2C``. ``col``/``endColumn`` are sent only for single-line
findings, as the toolkit requires. Levels follow SARIF's: manual -> error, assisted ->
warning, auto -> notice.
"""

from __future__ import annotations

from migrate.core.display import shown_path
from migrate.core.findings import Finding, ScanResult
from migrate.report.common import level, sorted_findings

COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, properties: dict[str, object], message: str) -> str:
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items())
    head = f"::{kind} {props}" if props else f"::{kind}"
    return f"{head}::{escape_data(message)}"


def annotation(f: Finding, root=None) -> str:
    props: dict[str, object] = {"file": shown_path(f.path, root), "line": f.line}
    if f.end_line <= f.line:
        props.update(col=f.column, endLine=f.line, endColumn=max(f.end_column, f.column))
    else:
        props["endLine"] = f.end_line
    props["title"] = f"{f.rule} {f.name}"
    return command(COMMANDS[level(f.impact, f.category)], props, f.message)


def render_github(result: ScanResult, root=None) -> str:
    """``root``: the folder finding paths are relative to; annotations name files relative
    to the current directory (the checkout) where they lie under it."""
    lines = [annotation(f, root) for f in sorted_findings(result.findings)]
    if result.target:  # a workflow-log line: which port target the fixes were made for
        lines.insert(0, command("notice", {"title": "migrate: port target"}, result.target))
    lines += [
        command("error", {"file": shown_path(e.path, root), "title": "migrate: file not scanned"}, e.message)
        for e in sorted(result.errors, key=lambda e: e.path)
    ]
    return "".join(line + "\n" for line in lines)
