"""Choosing fixes, merging identical edits, import placement, fixpoint."""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, Finding, Fix
from migrate.core.import_placement import import_edit
from migrate.fix.applier import apply_fixes, choose
from migrate.fix.rewrite import fix_text

from .conftest import make_finding, token_scan


def add(text, *statements, new_code=""):
    edit = import_edit(text, ast.parse(text), list(statements), new_code)
    return text if edit is None else text[: edit.start] + edit.content + text[edit.end :]


def test_overlapping_fix_waits_for_next_pass():
    text = "a.b.c\n"
    outer = make_finding(text, 0, 5, "X", rule="MIG001")
    inner = make_finding(text, 2, 3, "Y", rule="MIG002")
    assert [f.rule for f in choose([inner, outer], unsafe=False)] == ["MIG001"]


def test_unsafe_fix_needs_flag():
    text = "x = 1\n"
    f = make_finding(text, 4, 5, "2", applicability="unsafe", category="assisted")
    assert apply_fixes(text, [f], unsafe=False)[0] == text
    assert apply_fixes(text, [f], unsafe=True)[0] == "x = 2\n"


def test_identical_helper_insertions_are_shared():
    text = "a = f(1)\nb = f(2)\n"
    helper = Edit(0, 0, "def g(x):\n    return x\n\n")
    f1 = Finding(
        "MIG301", "r", "t.py", 1, 5, 1, 9, "m", "assisted", Fix("unsafe", "d", [helper, Edit(4, 5, "g")])
    )
    f2 = Finding(
        "MIG301", "r", "t.py", 2, 5, 2, 9, "m", "assisted", Fix("unsafe", "d", [helper, Edit(13, 14, "g")])
    )
    new, applied = apply_fixes(text, [f1, f2], unsafe=True)
    assert new == "def g(x):\n    return x\n\na = g(1)\nb = g(2)\n"
    assert len(applied) == 3


def test_suppressed_finding_is_not_fixed():
    from migrate.core.rules import default_rules
    from migrate.scan.engine import scan_text

    text = "import torch\ntorch.cuda.synchronize()  # migrate: ignore[MIG101]\n"
    findings = scan_text(text, "t.py", "python", default_rules())
    assert [f.rule for f in findings] == []
    assert apply_fixes(text, findings, unsafe=False)[0] == text


def test_edit_content_follows_crlf():
    text = "x = 1\r\ny = 2\r\n"
    f = make_finding(text, 0, 0, "# note\n")
    assert apply_fixes(text, [f], unsafe=False)[0] == "# note\r\nx = 1\r\ny = 2\r\n"


def test_import_goes_after_first_torch_import():
    text = '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nimport torch\nimport numpy\n'
    assert add(text, "import torch_npu") == text.replace("import torch\n", "import torch\nimport torch_npu\n")


def test_import_after_multiline_from_torch():
    text = "from torch.nn import (\n    Linear,\n    ReLU,\n)\nx = 1\n"
    assert add(text, "import torch_npu") == text.replace(")\n", ")\nimport torch_npu\n", 1)


def test_import_after_docstring_and_future_without_torch():
    text = '#!/usr/bin/env python\n"""Doc\nstring."""\nfrom __future__ import annotations\nimport os\n'
    assert add(text, "import torch_npu") == text.replace("annotations\n", "annotations\nimport torch_npu\n")


def test_import_before_first_statement_keeps_header_comments():
    text = "#!/bin/env python\n# -*- coding: utf-8 -*-\n# Licence.\n\nimport os\n"
    want = text.replace("\nimport os", "\nimport torch_npu\nimport os")
    assert add(text, "import torch_npu") == want


def test_existing_import_in_any_form_counts():
    for have in (
        "import torch_npu",
        "import torch_npu as tn",
        "from torch_npu import npu",
        "import torch_npu.contrib",
        "try:\n    import torch_npu\nexcept ImportError:\n    pass",
    ):
        text = f"import torch\n{have}\nx = 1\n"
        assert add(text, "import torch_npu") == text, have


def test_binding_added_when_new_code_spells_the_module():
    text = "import torch\nfrom torch_npu import optim\n"
    assert add(text, "import torch_npu", new_code="torch_npu.npu_rms_norm(x)") == text.replace(
        "import torch\n", "import torch\nimport torch_npu\n"
    )


def test_import_inside_function_does_not_count():
    text = "import torch\ndef f():\n    import torch_npu\n"
    assert "import torch\nimport torch_npu\ndef" in add(text, "import torch_npu")


def test_torchvision_is_not_torch():
    text = "import torchvision\nimport torch.nn as nn\n"
    assert add(text, "import torch_npu") == text + "import torch_npu\n"


def test_import_added_exactly_once_over_many_fixes():
    text = "import torch\na = torch.cuda.is_available()\nb = torch.cuda.device_count()\n"
    new, edits, _, err = fix_text(text, "t.py", "python", [], token_scan, unsafe=False)
    assert err is None
    assert new.count("import math") == 1
    assert [e.after for e in edits].count("import math") == 1


def test_import_torch_npu_only_where_the_new_code_names_it():
    """torch_npu >= 2.5 autoloads with `import torch`: torch.npu.x needs no import."""
    text = "import torch\nx = torch.cuda.is_available()\n"
    start = text.index("cuda")
    plain = make_finding(text, start, start + 4, "npu", imports=["import torch_npu"])
    assert apply_fixes(text, [plain], unsafe=False)[0] == text.replace("cuda", "npu")
    named = make_finding(
        text, 13, len(text) - 1, "x = torch_npu.npu_rms_norm(x)", imports=["import torch_npu"]
    )
    new, _ = apply_fixes(text, [named], unsafe=False)
    assert new == "import torch\nimport torch_npu\nx = torch_npu.npu_rms_norm(x)\n"


def test_fixpoint_second_run_changes_nothing():
    text = "import torch\nx = torch.cuda.current_device()\n"
    once, *_ = fix_text(text, "t.py", "python", [], token_scan, unsafe=False)
    twice, edits, _, _ = fix_text(once, "t.py", "python", [], token_scan, unsafe=False)
    assert twice == once and edits == []


def test_nested_fixes_reach_fixpoint_in_passes():
    # Two overlapping fixes on one span: the second waits for a re-scan.
    def scan(text, *a):
        out = []
        if "aaa" in text:
            i = text.index("aaa")
            out.append(make_finding(text, i, i + 3, "bb", rule="MIG001"))
            out.append(make_finding(text, i + 1, i + 2, "Z", rule="MIG002"))
        if "bb" in text:
            i = text.index("bb")
            out.append(make_finding(text, i, i + 2, "c", rule="MIG003"))
        return out

    new, edits, _, err = fix_text("aaa = 1\n", "t.py", "python", [], scan, unsafe=False)
    assert (new, err) == ("c = 1\n", None)
    assert [e.rule for e in edits] == ["MIG001", "MIG003"]


def test_import_stays_in_isort_order_with_following_torch_imports():
    text = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
    assert add(text, "import torch_npu") == text.replace("as nn\n", "as nn\nimport torch_npu\n")
