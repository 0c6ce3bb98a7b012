"""The effort model on scanned code: packages per library / symbol and file, free no-ops
and NPU-aware code, guarded imports, rule rows and [tool.migrate.effort] overrides."""

from __future__ import annotations

import textwrap

import pytest

from migrate.core.errors import UsageError
from migrate.core.rules import default_rules
from migrate.report.effort import EffortModel, estimate, project_model
from migrate.scan.engine import scan_text
from migrate.scan.session import ScanRequest, run_session

RULES = {r.code: r for r in default_rules()}


def _scan(code: str, rel: str = "m.py"):
    return scan_text(textwrap.dedent(code), rel, "python", default_rules(), "npu")


def _packages(findings, overrides=None):
    return {p.name: p for p in estimate(findings, EffortModel(RULES, overrides)).packages}


def test_one_package_per_symbol_and_file_not_per_occurrence():
    code = """
    import torch
    torch.cuda.tunable.enable(True)
    torch.cuda.tunable.enable(False)
    torch.cuda.tunable.enable(True)
    """
    found = _scan(code) + _scan(code, "n.py")
    assert len(found) == 6
    packages = estimate(found, EffortModel(RULES)).packages
    tunable = [p for p in packages if "tunable" in p.name]
    assert [(p.findings, p.paths) for p in tunable] == [(3, ["m.py"]), (3, ["n.py"])]
    assert all(p.minutes == 45 for p in tunable)  # MIG103's row: 45 min per symbol and file


def test_noop_and_npu_aware_cost_nothing():
    found = _scan("""
    import torch
    torch.backends.cudnn.benchmark = True
    torch.cuda.tunable.enable(True)
    """)
    noop = [f for f in found if f.rule == "MIG401"]
    assert noop and noop[0].impact == "noop"
    # what the port-target analysis makes of code that handles NPU (issue 8)
    found = [f.left_as_is("handled") if f.rule == "MIG103" else f for f in found]
    effort = estimate(found, EffortModel(RULES))
    assert effort.minutes == 0
    assert {p.why for p in effort.packages} == {"noop on an NPU: costs nothing", "already handles NPU"}


def test_guarded_optional_import_is_discounted_and_labelled():
    guarded = _scan("""
    try:
        import cupy
    except ImportError:
        cupy = None

    def f(x):
        return cupy.asarray(x) if cupy is not None else x
    """)
    plain = _scan("""
    import cupy

    def f(x):
        return cupy.asarray(x)
    """)
    assert guarded and all(f.guarded for f in guarded)
    assert plain and not any(f.guarded for f in plain)
    (g,) = _packages(guarded).values()
    (p,) = _packages(plain).values()
    assert g.minutes == p.minutes * 0.25 == 30
    assert "guarded import" in g.name and "try/except ImportError" in g.why


def test_a_reraising_handler_is_no_fallback():
    found = _scan("""
    try:
        import cupy
    except ImportError:
        raise RuntimeError("install cupy")
    """)
    assert found and not any(f.guarded for f in found)


def test_library_rules_make_one_package_across_files():
    found = []
    for rel in ("a.py", "b.py", "c.py"):
        found += _scan("import cupy\nx = cupy.zeros(3)\ny = cupy.ones(3)\n", rel)
    (pkg,) = _packages(found).values()
    assert pkg.name == "cupy (library)" and pkg.paths == ["a.py", "b.py", "c.py"]
    assert pkg.minutes == 120 + 30 * 2 and pkg.findings == len(found)


def test_project_overrides_by_rule_and_category():
    found = _scan("import cupy\nx = cupy.zeros(3)\n")
    (pkg,) = _packages(found, {"MIG513": 10}).values()
    assert pkg.minutes == 10
    found = _scan("import torch\ntorch.cuda.tunable.enable(True)\n")
    (pkg,) = _packages(found, {"manual": {"minutes": 20}}).values()
    assert pkg.minutes == 45  # the rule row is more specific than a category default
    (pkg,) = _packages(found, {"MIG103": {"minutes": 5, "per": "file"}}).values()
    assert pkg.minutes == 5 and pkg.name == "MIG103 torch-cuda-no-npu-equivalent"


def test_config_effort_table_reaches_the_report(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.migrate.effort]\nMIG513 = 7\n")
    (tmp_path / "a.py").write_text("import cupy\nx = cupy.zeros(3)\n")
    session = run_session(ScanRequest([tmp_path], no_cache=True))
    assert estimate(session.result.findings, project_model(session.effort)).minutes == 7


@pytest.mark.parametrize(
    "table, message",
    [
        ("MIG999 = 5", "MIG999: not a rule code or a category"),
        ("MIG513 = -1", "want a number of minutes >= 0"),
        ('MIG513 = {per = "commit"}', "per: 'commit' is not one of"),
    ],
)
def test_bad_effort_tables_fail_clearly(tmp_path, table, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.migrate.effort]\n{table}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(UsageError, match=message):
        run_session(ScanRequest([tmp_path], no_cache=True))


def test_one_decision_is_one_package_however_many_symbols_it_holds():
    """A DataParallel branch (its device_count test, the wrapper, the .cuda(i)) is one thing a
    person ports: one package at the dearest figure, not three, however many lines apart its
    lines are; two branches are two packages."""
    code = """
    import torch


    def wrap(model, args):
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        return model
    """
    found = scan_text(textwrap.dedent(code), "m.py", "python", default_rules(), "portable")
    manual = [f for f in found if f.category == "manual"]
    assert len({f.symbol for f in manual}) == 2
    (package,) = [p for p in estimate(manual, EffortModel(RULES)).packages]
    assert package.minutes == 60 and "one decision" in package.name and package.findings == 2
    spread = textwrap.dedent(code).replace(
        "            model = torch.nn", "            pass\n" * 8 + "            model = torch.nn", 1
    )
    found = scan_text(spread, "m.py", "python", default_rules(), "portable")
    (package,) = estimate([f for f in found if f.category == "manual"], EffortModel(RULES)).packages
    assert package.findings == 2 and package.minutes == 60
    found += scan_text(textwrap.dedent(code), "n.py", "python", default_rules(), "portable")
    packages = estimate([f for f in found if f.category == "manual"], EffortModel(RULES)).packages
    assert [p.findings for p in packages] == [2, 2] and sum(p.minutes for p in packages) == 120


def test_type_checks_and_fallbacks_for_an_older_torch_cost_nothing():
    code = """
    import torch
    try:
        from torch.amp import GradScaler
    except ImportError:
        from torch.cuda.amp import GradScaler


    def on_gpu(x):
        return isinstance(x, torch.cuda.FloatTensor)
    """
    found = _scan(code)
    assert found and all(f.npu_aware for f in found)
    assert estimate(found, EffortModel(RULES)).minutes == 0
