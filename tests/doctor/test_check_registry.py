"""Doctor checks are registered once, with their id: a second check with an id already taken
fails at load naming both, a check cannot report another id, and the docs list the ids the
registry holds."""

from __future__ import annotations

import sys

import pytest

import migrate.doctor.checks as checks_pkg
from migrate.core.registry import RegistryError
from migrate.doctor.checks import CHECKS, ids_by_group, ordered
from migrate.doctor.report import GROUPS, Check, Outcome

NEW = """
from migrate.doctor.checks import CHECKS
from migrate.doctor.report import Outcome


@CHECKS.register({name!r}, group="devices", order=99)
def {fn}(ctx) -> Outcome:
    return Outcome("ok", "a test check")
"""


@pytest.fixture
def extra_checks(tmp_path, monkeypatch):
    """A folder searched as part of migrate.doctor.checks; modules written there are
    discovered by ``CHECKS.rediscover()``."""
    CHECKS.discover()
    monkeypatch.setattr(checks_pkg, "__path__", [*checks_pkg.__path__, str(tmp_path)])
    added: list[str] = []

    def write(module: str, name: str) -> None:
        (tmp_path / f"{module}.py").write_text(NEW.format(name=name, fn=module))
        added.append(name)

    yield write
    for name in added:  # only the test's own members: a duplicate left the original in place
        if getattr(CHECKS.get(name), "__module__", "").startswith("migrate.doctor.checks.extra_"):
            CHECKS.unregister(name)
    for mod in [m for m in sys.modules if m.startswith("migrate.doctor.checks.extra_")]:
        del sys.modules[mod]


def test_a_duplicate_id_fails_at_load_naming_both(extra_checks):
    extra_checks("extra_dup", "visible-devices")
    with pytest.raises(RegistryError) as err:
        CHECKS.rediscover()
    text = str(err.value)
    assert "doctor check 'visible-devices' registered twice" in text
    assert "migrate.doctor.checks.devices.visible" in text and "extra_dup" in text


def test_a_new_check_is_discovered_listed_and_reported_under_its_id(extra_checks):
    extra_checks("extra_new", "extra-probe")
    CHECKS.rediscover()
    assert "extra-probe" in ids_by_group()["devices"]
    fn = CHECKS["extra-probe"]
    check = Check.of("extra-probe", CHECKS.meta("extra-probe")["group"], fn(None))
    assert (check.id, check.group, check.status) == ("extra-probe", "devices", "ok")


@pytest.mark.parametrize("name", ["Visible_Devices", "visible devices", "-x", ""])
def test_an_id_that_is_not_kebab_case_fails(name):
    with pytest.raises(RegistryError, match="kebab-case"):
        CHECKS.register(name, group="devices", order=1)(lambda ctx: Outcome("ok", ""))
    assert name not in CHECKS


def test_every_check_is_in_display_order_and_listed_once():
    names = [name for name, _, _ in ordered()]
    assert sorted(names) == sorted(CHECKS) and len(set(names)) == len(names)
    groups = [GROUPS.index(meta["group"]) for _, _, meta in ordered()]
    assert groups == sorted(groups)
    assert [i for ids in ids_by_group().values() for i in ids] == names
