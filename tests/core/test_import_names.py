"""A name joins an import the file has, in the statement's own shape (migrate/core/
import_names.py)."""

from __future__ import annotations

import ast

from migrate.core.findings import LineIndex
from migrate.core.import_names import name_added


def added(text: str, name: str) -> str | None:
    tree = ast.parse(text)
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom)
    edit = name_added(text, LineIndex(text), node, name)
    return None if edit is None else text[: edit.start] + edit.content + text[edit.end :]


def test_one_line_sorted_and_not():
    assert added("from m import a, c\n", "b") == "from m import a, b, c\n"
    assert added("from m import c, a\n", "b") == "from m import c, a, b\n"


def test_one_name_a_line_keeps_its_indent_and_trailing_commas():
    assert (
        added("from m import (\n    a,\n    c,\n)\n", "b") == "from m import (\n    a,\n    b,\n    c,\n)\n"
    )
    assert added("from m import (\n    a,\n    b\n)\n", "c") == "from m import (\n    a,\n    b,\n    c,\n)\n"


def test_yapf_wrapped_grows_beside_its_names_only_within_79_columns():
    mm = "from .utils import (get_device, is_cuda_available,\n                    is_mlu_available)\n"
    assert added(mm, "is_npu_available").endswith("is_mlu_available, is_npu_available)\n")
    xt = (
        "from transformers import (AutoModel, AutoModelForCausalLM, AutoTokenizer,\n"
        "                          BitsAndBytesConfig, CLIPImageProcessor,\n"
        "                          CLIPVisionModel, GenerationConfig)\n"
    )
    assert added(xt, "is_torch_npu_available") is None  # 81 columns: a statement of its own


def test_a_bound_name_a_star_or_a_backslash_is_left():
    assert added("from m import a, b\n", "b") is None
    assert added("from m import *\n", "b") is None
    assert added("from m import a, \\\n    c\n", "b") is None
