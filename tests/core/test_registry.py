"""The one registry type: decorator registration, package-walk discovery, loud failures."""

from __future__ import annotations

import sys
import textwrap
import types

import pytest

from migrate.core.registry import Registry, RegistryError


@pytest.fixture
def plugin_package(tmp_path, monkeypatch):
    """An importable package ``regpkg`` in tmp_path whose modules register into REG."""
    pkg = tmp_path / "regpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    holder = types.ModuleType("regholder")
    holder.REG = Registry("widget", "regpkg")
    monkeypatch.setitem(sys.modules, "regholder", holder)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg, holder.REG
    for name in [m for m in sys.modules if m == "regpkg" or m.startswith("regpkg.")]:
        del sys.modules[name]


def _member(pkg, module: str, name: str) -> None:
    (pkg / f"{module}.py").write_text(
        textwrap.dedent(f"""
        from regholder import REG

        @REG.register({name!r}, colour="blue")
        def member():
            return {name!r}
    """)
    )


def test_members_are_discovered_by_walking_the_package(plugin_package):
    pkg, reg = plugin_package
    _member(pkg, "alpha", "a")
    sub = pkg / "nested"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    _member(sub, "beta", "b")
    assert sorted(reg) == ["a", "b"]
    assert reg["b"]() == "b" and reg.meta("a") == {"colour": "blue"}


def test_a_new_module_is_picked_up_with_no_other_edit(plugin_package):
    pkg, reg = plugin_package
    _member(pkg, "alpha", "a")
    assert list(reg) == ["a"]
    _member(pkg, "gamma", "c")
    reg.rediscover()
    assert sorted(reg) == ["a", "c"]


def test_duplicate_names_fail_loudly_naming_both(plugin_package):
    pkg, reg = plugin_package
    _member(pkg, "alpha", "a")
    _member(pkg, "again", "a")
    with pytest.raises(RegistryError, match="widget 'a' registered twice"):
        list(reg)


def test_unknown_name_lists_the_known_ones(plugin_package):
    pkg, reg = plugin_package
    _member(pkg, "alpha", "a")
    with pytest.raises(RegistryError, match=r"unknown widget 'zz' \(known: a\)"):
        reg["zz"]


def test_check_rejects_an_unusable_member():
    def must_be_callable(name, member, meta):
        if not callable(member):
            raise TypeError("is not callable")

    reg = Registry("widget", "migrate.core", check=must_be_callable)
    with pytest.raises(RegistryError, match="widget 'x'.*is not callable"):
        reg.add("x", 42)
