"""tools/check_sizes.py: the module- and function-size gate and its ratchet."""

from __future__ import annotations

from pathlib import Path

import check_sizes
import pytest
import yaml


def _write_ratchet(path: Path, module: dict | None = None, function: dict | None = None, exclude=None):
    body = {
        "limits": {"module": 20, "function": 4},
        "exclude": exclude or {},
        "module": module or {},
        "function": function or {},
    }
    path.write_text("# a header kept by --update\n" + yaml.safe_dump(body), encoding="utf-8")
    return path


def _function(name: str, body_lines: int, indent: str = "") -> str:
    lines = [f"{indent}def {name}():"] + [f"{indent}    x = {i}" for i in range(body_lines)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "small.py").write_text(_function("ok", 2), encoding="utf-8")
    return tmp_path


def _run(repo: Path, ratchet: Path, *extra: str) -> int:
    return check_sizes.main(["pkg", "--repo", str(repo), "--ratchet", str(ratchet), *extra])


def test_the_tree_passes_its_ratchet(repo_root: Path) -> None:
    """The checked-in ratchet matches today's tree exactly (the gate .ci/run runs)."""
    ratchet = check_sizes.Ratchet.load(check_sizes.RATCHET)
    files = check_sizes.python_files(repo_root, check_sizes.ROOTS, ratchet.exclude)
    assert check_sizes.problems(check_sizes.measure(repo_root, files), ratchet) == []


def test_a_new_long_function_fails_naming_its_file(repo: Path, capsys) -> None:
    src = "class Box:\n" + _function("long", 6, indent="    ")
    (repo / "pkg" / "big.py").write_text(src, encoding="utf-8")
    assert _run(repo, _write_ratchet(repo / "r.yaml")) == 1
    err = capsys.readouterr().err
    assert "pkg/big.py:Box.long: function of 7 lines, over the limit of 4" in err
    assert "small.py" not in err


def test_a_new_long_module_fails(repo: Path, capsys) -> None:
    (repo / "pkg" / "many.py").write_text("x = 1\n" * 21, encoding="utf-8")
    assert _run(repo, _write_ratchet(repo / "r.yaml")) == 1
    assert "pkg/many.py: module of 21 lines, over the limit of 20" in capsys.readouterr().err


def test_an_offender_may_not_grow_past_its_ceiling(repo: Path, capsys) -> None:
    big = repo / "pkg" / "big.py"
    big.write_text(_function("outer", 5) + _function("inner", 3, "    "), encoding="utf-8")
    ratchet = _write_ratchet(repo / "r.yaml", function={"pkg/big.py:outer": 10})
    assert _run(repo, ratchet) == 0
    # the nested function counts in its parent: outer is 11 lines now
    big.write_text(_function("outer", 5) + _function("inner", 4, "    "), encoding="utf-8")
    assert _run(repo, ratchet) == 1
    err = capsys.readouterr().err
    assert "pkg/big.py:outer: function grew to 11 lines, past its ratchet ceiling 10" in err


def test_a_stale_entry_fails_and_update_tightens_it(repo: Path, capsys) -> None:
    (repo / "pkg" / "big.py").write_text(_function("f", 6) + _function("g", 8), encoding="utf-8")
    ratchet = _write_ratchet(
        repo / "r.yaml", function={"pkg/big.py:f": 9, "pkg/big.py:g": 9, "pkg/gone.py:h": 20}
    )
    assert _run(repo, ratchet) == 1
    err = capsys.readouterr().err
    assert "pkg/big.py:f: function shrank to 7 lines: lower its ceiling 9" in err
    assert "pkg/gone.py:h: function in the ratchet is gone" in err
    assert "pkg/big.py:g" not in err
    assert _run(repo, ratchet, "--update") == 0
    text = ratchet.read_text(encoding="utf-8")
    assert text.startswith("# a header kept by --update\n")
    assert yaml.safe_load(text)["function"] == {"pkg/big.py:f": 7, "pkg/big.py:g": 9}
    # a ceiling is never raised nor an offender added by --update
    (repo / "pkg" / "big.py").write_text(_function("f", 8) + _function("k", 8), encoding="utf-8")
    assert _run(repo, ratchet, "--update") == 1
    assert yaml.safe_load(ratchet.read_text(encoding="utf-8"))["function"] == {"pkg/big.py:f": 7}


def test_an_excluded_folder_is_named_not_silent(repo: Path, capsys) -> None:
    (repo / "pkg" / "inputs").mkdir()
    (repo / "pkg" / "inputs" / "sample.py").write_text("x = 1\n" * 50, encoding="utf-8")
    ratchet = _write_ratchet(repo / "r.yaml", exclude={"pkg/inputs": "inputs kept as written"})
    assert _run(repo, ratchet) == 0
    assert "not measured: pkg/inputs (inputs kept as written)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "body, message",
    [
        ({"limits": {"module": 10}}, "limits must give"),
        ({"limits": {"module": 10, "function": 4}, "exclude": {"x": ""}}, "needs its reason"),
        ({"limits": {"module": 10, "function": 4}, "function": {"a.py:f": 3}}, "must exceed 4"),
        ({"limits": {"module": 10, "function": 4}, "modules": {}}, "unknown keys"),
    ],
)
def test_a_malformed_ratchet_names_the_file(tmp_path: Path, body: dict, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    with pytest.raises(SystemExit, match=message) as err:
        check_sizes.Ratchet.load(path)
    assert str(path) in str(err.value)
