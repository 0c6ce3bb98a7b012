"""Arms of `if` statements that never run on the target (scan/python/dead_code.py): each guard
is scanned in a small file; a CUDA call in a dead arm is left as is, in a live arm ported."""

from __future__ import annotations

import pytest

from migrate.core.effort_spec import defaults
from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text

HEAD = "import torch\nfrom packaging.version import Version, parse\n\n"


def _left_as_is(test: str) -> tuple[bool, bool]:
    """(body left as is, else arm left as is) for ``if <test>:``."""
    code = HEAD + f"if {test}:\n    torch.cuda.synchronize()\nelse:\n    torch.cuda.empty_cache()\n"
    found = {f.line: f for f in scan_text(code, "m.py", "python", default_rules(), "portable")}
    body, orelse = found[5], found[7]
    for f in (body, orelse):
        assert f.rule == "MIG101"
        assert f.npu_aware == (f.fix is None)
    return body.npu_aware, orelse.npu_aware


@pytest.mark.parametrize(
    "test, dead",
    [
        ('Version(torch.__version__) < Version("1.8.0")', "body"),
        ('Version("1.8.0") > Version(torch.__version__)', "body"),  # the version on the right
        ('parse(torch.__version__) <= parse("1.13")', "body"),
        ('torch.__version__ < "1.9"', "body"),
        ('Version(torch.__version__) >= Version("1.9.0")', "else"),
        ('Version(torch.__version__) > Version("2.0")', "else"),
        ('Version(torch.__version__) >= Version("{oldest}")', "else"),  # every NPU torch
        ('Version(torch.__version__) > Version("{oldest}")', None),  # torch == oldest: no
        ('Version(torch.__version__) <= Version("{oldest}")', None),
        ('Version(torch.__version__) < Version("2.6")', None),  # newer than the oldest: may run
        ('Version(torch.__version__) < Version("1.8.0") and torch.cuda.is_available()', "body"),
        ('Version(torch.__version__) < Version("1.8.0") or torch.cuda.is_available()', None),
        ('not Version(torch.__version__) < Version("1.8.0")', "else"),
        ("False", "body"),
        ("0", "body"),
        ("torch.cuda.is_available()", None),
    ],
)
def test_guards_decided_for_every_torch_torch_npu_runs_with(test, dead):
    test = test.replace("{oldest}", defaults().oldest_torch)
    body, orelse = _left_as_is(test)
    assert (body, orelse) == (dead == "body", dead == "else")


def test_a_name_bound_to_a_version_test_decides_too():
    code = HEAD + (
        '_OLD = Version(torch.__version__) < Version("1.7.0")\n'
        '_NEW = Version(torch.__version__) > Version("1.12.0")\n'
        "if _OLD:\n    torch.cuda.synchronize()\n"
        "if not _NEW:\n    torch.cuda.ipc_collect()\n"
        "if _NEW:\n    torch.cuda.empty_cache()\n"
    )
    found = {f.line: f for f in scan_text(code, "m.py", "python", default_rules(), "portable")}
    assert found[7].npu_aware and found[9].npu_aware
    assert not found[11].npu_aware and found[11].fix is not None
