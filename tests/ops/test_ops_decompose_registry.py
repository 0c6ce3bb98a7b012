"""The decomposition registry discovers rule modules by package walk (no list to edit)."""

from __future__ import annotations

import importlib
import sys

import pytest

from migrate.core.registry import RegistryError
from migrate.ops import decompositions as decomp

RULE = '''
"""A rule added by a test: Softsign as x / (1 + |x|)."""
from migrate.ops.decompositions import decomposition


@decomposition({name!r}, "Softsign", emits=["Abs", "Add", "Div", "Constant"])
def softsign(node, b):
    """x / (1 + |x|)."""
    x = node.inputs[0]
    return [b.op("Div", x, b.op("Add", b.op("Abs", x), b.const(1.0, like=x)))]
'''

DECLINING = '''
"""A rule added by a test: it declines every Softsign, naming the node."""
from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition


@decomposition("softsign-declines", "Softsign", emits=["Abs"])
def softsign(node, b):
    """Declines."""
    b.op("Abs", node.inputs[0])  # what a rule emitted before declining is dropped
    return Decline(f"{node.name} has an input the test does not cover")
'''


@pytest.fixture
def extra_rules_dir(tmp_path):
    """A folder appended to the rules package's path; modules and members removed after."""
    pkg = importlib.import_module(decomp.RULES_PACKAGE)
    before = set(decomp.DECOMPOSITIONS)
    pkg.__path__.append(str(tmp_path))
    yield tmp_path
    pkg.__path__.remove(str(tmp_path))
    for name in set(decomp.DECOMPOSITIONS) - before:
        decomp.DECOMPOSITIONS.unregister(name)
    for mod in [m for m in sys.modules if m.startswith(decomp.RULES_PACKAGE + ".test_added")]:
        del sys.modules[mod]


def test_a_new_rule_module_is_picked_up_with_no_other_edit(extra_rules_dir):
    assert decomp.rules_for("Softsign") == []
    (extra_rules_dir / "test_added_softsign.py").write_text(RULE.format(name="softsign-div"))
    decomp.DECOMPOSITIONS.rediscover()
    assert [r.name for r in decomp.rules_for("Softsign")] == ["softsign-div"]
    assert decomp.decomposition_for("Softsign") == "softsign-div"


def test_a_duplicate_rule_name_fails_loudly(extra_rules_dir):
    (extra_rules_dir / "test_added_dup.py").write_text(RULE.format(name="gelu-erf"))
    with pytest.raises(RegistryError, match="'gelu-erf' registered twice"):
        decomp.DECOMPOSITIONS.rediscover()


def test_a_rule_without_emits_is_refused():
    with pytest.raises(RegistryError, match="declares no emitted ops"):
        decomp.decomposition("no-emits", "Softsign", emits=[])(lambda node, b: None)


def test_every_rule_module_of_the_package_registers_something():
    modules = {r.fn.__module__ for _, r in decomp.DECOMPOSITIONS.items()}
    import pkgutil

    pkg = importlib.import_module(decomp.RULES_PACKAGE)
    walked = {i.name for i in pkgutil.iter_modules(pkg.__path__, decomp.RULES_PACKAGE + ".")}
    assert walked == modules


def test_a_declining_rule_keeps_the_node_and_its_reason_reaches_the_report(extra_rules_dir, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from migrate.ops.decompose.run import run_decompose

    (extra_rules_dir / "test_added_declining.py").write_text(DECLINING)
    decomp.DECOMPOSITIONS.rediscover()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("Softsign", ["x"], ["y"], name="soft")
    model = helper.make_model(
        helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "in.onnx"))
    report, _ = run_decompose(tmp_path / "in.onnx", tmp_path / "out.onnx", force={"Softsign"}, verify=False)
    assert report["rewrites"] == []
    assert report["declined"] == [
        {
            "node": "soft",
            "op": "Softsign",
            "why": "softsign-declines: soft has an input the test does not cover",
        }
    ]
    assert [n.op_type for n in onnx.load(str(tmp_path / "out.onnx")).graph.node] == ["Softsign"]
