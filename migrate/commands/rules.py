"""CLI: `migrate rules [ID]` lists the rules, or prints one rule's doc, from the YAML rows
that drive `migrate scan`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from migrate.commands.output import emit
from migrate.core.errors import RuleError, UsageError
from migrate.core.rules import Rule, load_rules
from migrate.report import ruledoc

FORMATS = ("text", "json", "markdown")


def _load(folder: Path | None) -> list[Rule]:
    if folder is not None and not folder.is_dir():
        raise UsageError(f"rules folder {folder} does not exist")
    try:
        return load_rules(folder)
    except FileNotFoundError as exc:
        raise UsageError(f"cannot find the rule files: {exc}") from None
    except (RuleError, yaml.YAMLError, OSError) as exc:
        raise UsageError(f"bad rule file: {' '.join(str(exc).split())}") from None


def find_rule(rules: list[Rule], key: str) -> Rule:
    """A rule by code (any case) or by name."""
    for rule in rules:
        if rule.code == key.upper() or rule.name == key.lower():
            return rule
    raise UsageError(f"unknown rule {key!r} (run `migrate rules` to list them)")


def _table(rules: list[Rule]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("Code", "Name", "Category", "Fix", "Kind"):
        table.add_column(column, no_wrap=column in ("Code", "Category", "Fix"))
    for r in rules:
        table.add_row(r.code, r.name, r.category, ruledoc.fix_availability(r), r.kind)
    console = Console(width=120, color_system=None, highlight=False, markup=False)
    with console.capture() as capture:
        console.print(table)
    return capture.get() + f"{len(rules)} rules. `migrate rules ID` shows one rule's documentation.\n"


def render(rules: list[Rule], key: str | None, fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r} for `migrate rules` (choose from {', '.join(FORMATS)})")
    rule = find_rule(rules, key) if key else None
    if fmt == "json":
        data = ruledoc.rule_to_dict(rule) if rule else [ruledoc.rule_to_dict(r) for r in rules]
        return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    if rule is not None:
        return ruledoc.rule_markdown(rule)
    return ruledoc.rules_page(rules) if fmt == "markdown" else _table(rules)


def rules_command(
    rule_id: Annotated[
        str | None, typer.Argument(metavar="ID", help="Rule code (MIG101) or name (torch-cuda-api).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text | json | markdown.")] = "text",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE (e.g. docs/rules.md) instead.")
    ] = None,
    rules_dir: Annotated[
        Path | None, typer.Option("--rules-dir", hidden=True, help="Read rules from this folder (tests).")
    ] = None,
) -> None:
    """List the rules, or show one rule's doc: what / why / example / fix safety."""
    from migrate.core.outputs import check_output
    from migrate.core.resources import rules_dir as shipped

    folder = rules_dir if rules_dir is not None else shipped()
    check_output(output, "-o", sorted(Path(folder).glob("*.yaml")) if folder.is_dir() else [])
    emit(render(_load(rules_dir), rule_id, fmt), output)


def register(app: typer.Typer) -> None:
    app.command("rules")(rules_command)
