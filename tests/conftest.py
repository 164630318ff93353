"""Shared fixtures: where Unleash's client specification lives."""

from __future__ import annotations

import os
from pathlib import Path

_DEFAULT_SPEC = Path(__file__).resolve().parent / "spec" / "client-specification"


def client_spec_dir() -> Path:
    """``FLAGCORE_CLIENT_SPEC``, or the copy vendored in ``tests/spec/client-specification``."""
    return Path(os.environ.get("FLAGCORE_CLIENT_SPEC", _DEFAULT_SPEC))


# The suite runs on small shared machines: timing-based health checks and deadlines
# would fail on load, not on behaviour. Correctness checks stay on.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("flagcore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# In CI (CI=true) the examples are derandomized: a run there is reproducible, and new
# inputs are explored in developers' runs instead.
settings.register_profile("flagcore-ci", parent=settings.get_profile("flagcore"), derandomize=True)
settings.load_profile("flagcore-ci" if os.environ.get("CI") else "flagcore")
