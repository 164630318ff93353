"""Shared fixtures: where Unleash's client specification lives."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest

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


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's modules to bytecode once, before any worker starts.

    The suite starts `flagcore serve` and the CLI in hundreds of subprocesses. With
    ``PYTHONDONTWRITEBYTECODE`` set (as on CI machines) and an editable install, each of
    them compiled every module from source again: 0.4 s of each server's 1.2 s start.
    Cached bytecode is still read with that variable set; only writing it is off.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src", quiet=1)
