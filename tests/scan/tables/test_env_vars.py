"""One env-var table, one verdict: Python and text files agree on the same value."""

from __future__ import annotations

import pytest

from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text

CASES = {
    "shell": "export CUDA_VISIBLE_DEVICES={ids}\n",
    "docker": "ENV CUDA_VISIBLE_DEVICES={ids}\n",
    "python": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "{ids}"\n',
    "python-dict": 'import subprocess\nsubprocess.run(cmd, env={{"CUDA_VISIBLE_DEVICES": "{ids}"}})\n',
    "python-setdefault": 'import os\nos.environ.setdefault("CUDA_VISIBLE_DEVICES", "{ids}")\n',
}


def _verdict(kind: str, ids: str):
    text = CASES[kind].format(ids=ids)
    engine_kind = "python" if kind.startswith("python") else kind
    found = [f for f in scan_text(text, "f", engine_kind, default_rules(), "npu") if f.rule == "MIG701"]
    assert len(found) == 1, (kind, found)
    f = found[0]
    return f.category, f.fix is not None, "not ascending" in f.message


@pytest.mark.parametrize("kind", sorted(CASES))
def test_unordered_device_list_is_refused_everywhere(kind):
    assert _verdict(kind, "3,1") == ("manual", False, True)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_ascending_device_list_is_renamed_everywhere(kind):
    assert _verdict(kind, "0,1") == ("auto", True, False)


def test_ignoring_the_rule_hands_its_names_to_no_other_rule():
    from migrate.core.rules import select_rules

    rules = select_rules(default_rules(), None, ["MIG701"])
    for kind in ("shell", "python"):
        text = CASES[kind].format(ids="0")
        assert not [f for f in scan_text(text, "f", kind, rules) if "CUDA_VISIBLE_DEVICES" in f.message], kind
