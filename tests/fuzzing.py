"""Settings for the property/fuzz tests (hypothesis): a fixed, derandomized budget in CI so
the suite stays reproducible and inside its time share; ``MIGRATE_FUZZ=N`` runs N random
examples per property instead (a real fuzzing session)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_RUNS = int(os.environ.get("MIGRATE_FUZZ", "0") or 0)


def fuzz(examples: int = 60) -> settings:
    """Hypothesis settings for one property: ``examples`` in CI, $MIGRATE_FUZZ when set."""
    return settings(
        max_examples=_RUNS or examples,
        deadline=None,
        derandomize=not _RUNS,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        database=None,
    )
