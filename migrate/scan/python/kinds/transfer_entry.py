"""Kind ``transfer-entry-point``: --target transfer puts transfer_to_npu into each script.

``role: entry`` (the default) rows flag entry points without the import; ``role: undecided``
rows flag, after the other rules ran, a file that cannot be judged an entry point or a
module while transfer_to_npu would patch its CUDA uses (migrate/scan/python/transfer.py).
"""

from __future__ import annotations

from migrate.core.kinds import param, prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import one_of
from migrate.scan.python.pyfile import PyFile
from migrate.scan.python.transfer import ENTRY, UNDECIDED, entry_finding, is_entry_point

PARAMS = {"role": param(str, check=one_of(ENTRY, UNDECIDED), doc="entry (default) or undecided")}


@rule_kind(
    "transfer-entry-point", engine="python", params=PARAMS, tokens=prefilter_words, targets=("transfer",)
)
def run(f: PyFile, rules: list[Rule]) -> None:
    if f.target != "transfer" or not is_entry_point(f):
        return
    for rule in rules:
        if rule.params.get("role", ENTRY) == ENTRY:
            entry_finding(f, rule)
