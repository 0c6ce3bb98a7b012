"""tools/new_rule.py: each scaffold lands where its registry finds it, and fails loudly (the
loader names the fields) until every placeholder is filled in."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import new_rule
import pytest

from migrate.core.errors import RuleError
from migrate.core.registry import PLACEHOLDER, RegistryError
from migrate.core.rules import load_rules

TODO = new_rule.TODO


def _fill(path: Path, *values: str, token: str = PLACEHOLDER) -> None:
    """Replace the placeholders of ``path`` (``token``: as written), in order, by ``values``."""
    text = path.read_text(encoding="utf-8")
    for value in values:
        text = text.replace(token, value, 1)
    assert PLACEHOLDER not in text
    path.write_text(text, encoding="utf-8")


def test_a_rule_row_fails_the_load_naming_what_to_fill_in(repo_root: Path, tmp_path: Path) -> None:
    shutil.copytree(repo_root / "rules", tmp_path / "rules")
    assert new_rule.main(["--root", str(tmp_path), "rule", "MIG498", "my-rule", "rules/backends.yaml"]) == 0
    with pytest.raises(RuleError) as err:
        load_rules(tmp_path / "rules")
    assert str(err.value) == (
        "backends.yaml: rule MIG498 is a scaffold: fill in message, params.todo, doc.what, doc.why, "
        "doc.example, doc.fix_safety, examples[0].before, examples[0].after, examples[1].noop"
    )
    # nothing is written twice
    assert new_rule.main(["--root", str(tmp_path), "rule", "MIG498", "other", "rules/backends.yaml"]) == 2
    assert new_rule.main(["--root", str(tmp_path), "rule", "MIG497", "my-rule", "rules/backends.yaml"]) == 2


@pytest.fixture
def package_path(tmp_path: Path):
    """Extend a plug-in package's __path__ with its tmp_path twin (removed afterwards)."""
    added: list[tuple[list[str], str]] = []

    def extend(package: str) -> Path:
        folder = tmp_path.joinpath(*package.split("."))
        folder.mkdir(parents=True, exist_ok=True)
        paths = importlib.import_module(package).__path__
        paths.append(str(folder))
        added.append((paths, str(folder)))
        return folder

    yield extend
    for paths, folder in added:
        paths.remove(folder)


def _scaffold(tmp_path: Path, *argv: str) -> list[Path]:
    for sub in ("migrate/ops/decompose/rules", "migrate/doctor/checks", "tests/ops", "tests/doctor"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    assert new_rule.main(["--root", str(tmp_path), *argv]) == 0
    return sorted(p for p in tmp_path.rglob("*.py") if p.name != "__init__.py")


def test_a_decomposition_is_discovered_and_refused_until_filled_in(tmp_path: Path, package_path) -> None:
    from migrate.ops.decompositions import DECOMPOSITIONS, rules_for

    package_path("migrate.ops.decompose.rules")
    module, test = _scaffold(tmp_path, "decomposition", "scaffold-identity", "Identity")
    assert test.name == "test_ops_decompose_scaffold_identity.py" and PLACEHOLDER in test.read_text()
    with pytest.raises(
        RegistryError, match="decomposition 'scaffold-identity' .*is a scaffold: fill in docstring"
    ):
        DECOMPOSITIONS.rediscover()
    _fill(module, "its rows", "Identity", "Identity as itself", "x")
    module.write_text(module.read_text().replace('raise NotImplementedError("x")', "return [node.inputs[0]]"))
    try:
        DECOMPOSITIONS.rediscover()
        assert [d.name for d in rules_for("Identity")] == ["scaffold-identity"]
        assert rules_for("Identity")[0].emits == ("Identity",)
    finally:
        DECOMPOSITIONS.unregister("scaffold-identity")
        sys.modules.pop("migrate.ops.decompose.rules.scaffold_identity", None)


def test_a_doctor_check_is_discovered_and_refused_until_filled_in(tmp_path: Path, package_path) -> None:
    from migrate.doctor.checks import CHECKS, ids_by_group

    package_path("migrate.doctor.checks")
    module, test = _scaffold(tmp_path, "doctor-check", "scaffold-probe", "python", "--order", "999")
    assert test.name == "test_check_scaffold_probe.py" and PLACEHOLDER in test.read_text()
    with pytest.raises(RegistryError, match="doctor check 'scaffold-probe' .*is a scaffold"):
        CHECKS.rediscover()
    _fill(module, "A test's check", "what it reads", "x")
    try:
        CHECKS.rediscover()
        assert ids_by_group()["python"][-1] == "scaffold-probe"
    finally:
        CHECKS.unregister("scaffold-probe")
        sys.modules.pop("migrate.doctor.checks.scaffold_probe", None)


def _classes_module(path: Path):
    spec = importlib.util.spec_from_file_location("scaffold_classes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_a_precision_class_takes_torch_finfo_and_refuses_unfilled_bands(
    repo_root: Path, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    folder = tmp_path / "migrate" / "precision"
    folder.mkdir(parents=True)
    for name in ("classes.py", "thresholds.yaml"):
        shutil.copy(repo_root / "migrate" / "precision" / name, folder / name)
    assert new_rule.main(["--root", str(tmp_path), "precision-class", "float8_e4m3fn"]) == 0
    classes = _classes_module(folder / "classes.py")
    facts = classes.FACTS["float8_e4m3fn"]
    info = torch.finfo(torch.float8_e4m3fn)
    assert (2.0**-facts.mantissa, 2.0**facts.min_exp, facts.dtypes) == (
        info.eps,
        info.tiny,
        ("float8_e4m3fn",),
    )
    with pytest.raises(classes.PrecisionClassError) as err:
        classes.load(folder / "thresholds.yaml", classes.FACTS)
    assert (
        str(err.value)
        == "thresholds.yaml: dtypes.float8_e4m3fn is a scaffold: fill in rtol, atol, atol_rms, why"
    )
    _fill(folder / "thresholds.yaml", "0.125", "0.0", "0.1", "a test's bands", token=TODO)
    loaded = classes.load(folder / "thresholds.yaml", classes.FACTS)
    assert loaded.of_dtype("float8_e4m3fn") == "float8_e4m3fn"
    assert loaded.names[0] == "float8_e4m3fn"  # the least precise class now
    assert new_rule.main(["--root", str(tmp_path), "precision-class", "float8_e4m3fn"]) == 2
