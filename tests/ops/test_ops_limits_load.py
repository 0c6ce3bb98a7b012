"""limits.yaml is checked when it loads: a misspelt attribute, an unknown check kind or a
key its kind does not take is an error naming the file, the op and the key (never a limit
that silently keeps an op SUPPORTED, nor an internal error when a node is judged)."""

from __future__ import annotations

import pytest

from migrate.core.resources import op_registry_dir
from migrate.ops.onnx_limits import CHECKS, LIMITS_FILE, LimitsError, NodeView, check, limits, load_limits

pytest.importorskip("onnx")

SHIPPED = op_registry_dir() / LIMITS_FILE
CUMSUM = """  CumSum:
    - {check: attribute, attribute: %s, allowed: [0], default: 0,
       why: "test: only exclusive=0", source: "a test"}
"""


def _copy(tmp_path, extra: str = "", old: str = "", new: str = ""):
    """limits.yaml copied to tmp_path with ``extra`` checks appended under ``checks:`` and
    ``old`` replaced by ``new``."""
    text = SHIPPED.read_text(encoding="utf-8")
    if old:
        assert old in text
        text = text.replace(old, new, 1)
    if extra:
        text = text.replace("\nchecks:\n", "\nchecks:\n" + extra, 1)
    path = tmp_path / "limits.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _cumsum(exclusive: int) -> NodeView:
    return NodeView("CumSum", "", {"exclusive": exclusive}, [("FLOAT", 2, False), ("INT64", 0, True)], ["y"])


def test_the_shipped_file_loads_and_every_check_kind_is_judged():
    loaded = limits()
    assert sum(len(v) for v in loaded.values()) > 0
    assert {lim.check for v in loaded.values() for lim in v} <= set(CHECKS)


def test_a_correct_new_limit_restricts_the_op(tmp_path, monkeypatch):
    import migrate.ops.onnx_limits as L

    assert check(_cumsum(1)) is None  # no shipped CumSum limit
    loaded = load_limits(_copy(tmp_path, CUMSUM % "exclusive"))
    monkeypatch.setattr(L, "limits", lambda: loaded)
    verdict = check(_cumsum(1))
    assert verdict is not None and verdict.status == "restricted" and "exclusive=1" in verdict.reason
    assert check(_cumsum(0)) is None


def test_a_misspelt_attribute_fails_at_load_naming_file_op_and_key(tmp_path):
    path = _copy(tmp_path, CUMSUM % "exclusiv")
    with pytest.raises(LimitsError) as err:
        load_limits(path)
    text = str(err.value)
    assert str(path) in text and "CumSum[0]" in text
    assert "no attribute 'exclusiv'" in text and "did you mean 'exclusive'" in text


def test_an_attribute_of_another_op_fails(tmp_path):
    path = _copy(tmp_path, old="attribute: storage_order", new="attribute: select_last_index")
    with pytest.raises(LimitsError, match=r"MaxPool\[2\]: check attribute: ONNX MaxPool has no attribute"):
        load_limits(path)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("check: attribute_length, attribute: kernel_shape, allowed: [2, 3]",
         "check: attribute_lenght, attribute: kernel_shape, allowed: [2, 3]",
         "MaxPool[0]: unknown check 'attribute_lenght' (did you mean 'attribute_length'?)"),
        ("check: attribute_length, attribute: kernel_shape, allowed: [2, 3]",
         "check: attribute_length, attribute: kernel_shape, allow: [2, 3]",
         "MaxPool[0]: check attribute_length: unknown key 'allow' (did you mean 'allowed'?)"),
        ("check: attribute_min, attribute: blocksize, min: 2",
         "check: attribute_min, attribute: blocksize, max: 2",
         "DepthToSpace[0]: check attribute_min: unknown key 'max'"),
        ("check: output_unused, output: 1",
         "check: output_unused, output: '1'",
         "MaxPool[1]: check output_unused: output must be of type int, not '1'"),
        ("check: output_unused, output: 1",
         "check: output_unused",
         "MaxPool[1]: check output_unused: missing output"),
    ],
)  # fmt: skip
def test_a_wrong_check_key_fails_at_load_naming_file_op_and_key(tmp_path, old, new, says):
    path = _copy(tmp_path, old=old, new=new)
    with pytest.raises(LimitsError) as err:
        load_limits(path)
    assert str(path) in str(err.value) and says in str(err.value)


def test_an_unknown_onnx_type_name_fails(tmp_path):
    path = _copy(tmp_path, old="allowed: [FLOAT16, FLOAT]", new="allowed: [FLOAT16, FP32]")
    with pytest.raises(LimitsError, match=r"check input_dtype: allowed names no ONNX type \['FP32'\]"):
        load_limits(path)
