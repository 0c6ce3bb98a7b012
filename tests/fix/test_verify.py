"""Verification before writing: compile the whole file, libcst-parse what was touched."""

from __future__ import annotations

from migrate.fix.verify import touched_chunks, verify_python

OLD = (
    "import torch\n\n\n@dec\ndef f():\n    return 1\n\n\nclass C:\n    x = 'cuda'\n\n"
    "    def g(self):\n        return 2\n"
)


def test_only_touched_statements_are_reparsed():
    new = OLD.replace("'cuda'", "'npu'").replace("import torch\n", "import torch\nimport torch_npu\n")
    assert touched_chunks(OLD, new) == ["import torch_npu\n", "class C:\n    x = 'npu'\n"]
    assert verify_python(new, "t.py", OLD) is None


def test_decorated_statement_is_taken_whole():
    new = OLD.replace("return 1", "return 2")
    assert touched_chunks(OLD, new) == ["@dec\ndef f():\n    return 2\n"]


def test_unchanged_file_has_nothing_to_reparse():
    assert touched_chunks(OLD, OLD) == []


def test_broken_result_is_reported():
    assert "SyntaxError" in verify_python(OLD.replace("return 1", "return (1"), "t.py", OLD)


def test_a_class_whose_decorator_alone_changed_is_checked_with_a_body():
    """`@skipif(not torch.cuda.is_available())` rewritten, a comment above the first
    member: the header must not be checked on its own (it does not parse)."""
    old = (
        "import pytest\n\n\n@pytest.mark.skipif(not cuda(), reason='x')\nclass T:\n"
        "    # CUDA\n    def test_a(self):\n        pass\n"
    )
    new = old.replace("cuda()", "get_device_module().is_available()")
    assert verify_python(new, "t.py", old) is None
