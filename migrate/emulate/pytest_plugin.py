"""Run a test suite on the emulated NPU: ``pytest -p migrate.emulate.pytest_plugin``.

The emulation is activated when pytest configures (before test modules import torch_npu);
the ``npu_emulation`` fixture gives a test the run's monitor record. (``migrate run
--emulate npu -- pytest ...`` does the same and also writes the report.)
"""

from __future__ import annotations

import pytest


def pytest_configure(config) -> None:
    from migrate.emulate.activate import activate

    config._npu_emulation = activate()


@pytest.fixture
def npu_emulation(request):
    """The monitor Record of this process (ops seen on npu, findings, notes)."""
    return request.config._npu_emulation
