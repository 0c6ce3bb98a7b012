"""A torch-version test around a call decides its spelling: code that runs only below the
torch a generic call needs keeps a spelling those versions have, and code that runs only on
newer torch may use it (mmengine runner/amp.py before #572)."""

from __future__ import annotations

import ast

import pytest
from porting import port

from migrate.scan.python.pyfile import PyFile
from migrate.scan.python.version_guards import torch_range

# mmengine/runner/amp.py autocast, reduced
AMP = """\
    import torch
    from mmengine.utils import digit_version
    from mmengine.utils.dl_utils import TORCH_VERSION


    def autocast(enabled=True):
        if (digit_version('1.5.0') <= digit_version(TORCH_VERSION) <
                digit_version('1.10.0')):
            with torch.cuda.amp.autocast(enabled=enabled):
                yield
        else:
            with torch.cuda.amp.autocast(enabled=enabled):
                yield
    """


def test_code_run_only_below_the_generic_calls_torch_keeps_an_old_spelling():
    out = port(AMP)
    below, other = out.split("    else:\n")
    assert "torch.amp.autocast" not in below
    assert ".amp.autocast(enabled=enabled)" in below  # the device module's own autocast
    assert "torch.amp.autocast(" in other  # no guard there: the generic call
    assert port(out) == out


def test_a_guard_raising_the_floor_allows_a_newer_call():
    code = """\
        import torch
        from packaging import version

        if version.parse(torch.__version__) >= version.parse("2.3"):
            scaler = torch.cuda.amp.GradScaler()
        else:
            scaler = torch.cuda.amp.GradScaler()
        """
    out = port(code)
    new, old = out.split("else:\n")
    assert "torch.amp.GradScaler(" in new  # only torch >= 2.3 runs it
    assert "torch.amp.GradScaler(" not in old  # the file shows no floor: every torch


CHAIN = "digit_version('1.5.0') <= digit_version(TORCH_VERSION) < digit_version('1.10.0')"


@pytest.mark.parametrize(
    ("test", "branch", "expected"),
    [
        (
            "digit_version('1.5.0') <= digit_version(TORCH_VERSION) < digit_version('1.10.0')",
            0,
            ((1, 5), (1, 10)),
        ),
        (CHAIN, 1, (None, None)),
        ("torch.__version__ >= '2.0' and x", 0, ((2, 0), None)),
        ("torch.__version__ >= '2.0'", 1, (None, (2, 0))),
        ("Version(torch.__version__) <= Version('1.9')", 0, (None, (1, 10))),
        ("'1.9.0' < torch_version", 0, ((1, 9), None)),
        ("torch.__version__ < '1.10.1'", 0, (None, (1, 11))),
        ("other.__version__ >= '2.0'", 0, (None, None)),
        ("torch.__version__ >= '2.0' or x", 0, (None, None)),
    ],
)
def test_torch_range(test, branch, expected):
    text = f"import torch\nif {test}:\n    a = 1\nelse:\n    b = 2\n"
    f = PyFile.parse(text, "t.py")
    stmt = f.tree.body[1]
    assert isinstance(stmt, ast.If)
    node = (stmt.body if branch == 0 else stmt.orelse)[0]
    assert torch_range(f, node) == expected
