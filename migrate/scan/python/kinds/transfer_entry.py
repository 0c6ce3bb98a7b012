"""Kind ``transfer-entry-point``: --target transfer puts transfer_to_npu into each script."""

from __future__ import annotations

from migrate.core.kinds import prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.scan.python.pyfile import PyFile
from migrate.scan.python.transfer import entry_finding, is_entry_point


@rule_kind("transfer-entry-point", engine="python", params={}, tokens=prefilter_words, targets=("transfer",))
def run(f: PyFile, rules: list[Rule]) -> None:
    if f.target != "transfer" or not is_entry_point(f):
        return
    for rule in rules:
        entry_finding(f, rule)
