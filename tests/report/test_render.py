"""render(): format dispatch."""

from __future__ import annotations

import pytest

from migrate.report import FORMATS, render


def test_every_format_renders(result, rules, project):
    for fmt in FORMATS:
        out = render(result, fmt, rules, root=project)
        assert isinstance(out, str) and "MIG301" in out


def test_unknown_format_raises(result, rules):
    with pytest.raises(ValueError, match="unknown report format 'xml'"):
        render(result, "xml", rules)
