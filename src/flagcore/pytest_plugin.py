"""pytest plugin for code that uses flags (registered through the ``pytest11`` entry point).

Fixtures:

- ``flags``: a `flagcore.testkit.FlagsBuilder` for the test (the flags it defines, and
  every evaluation the code under test made);
- ``flag_engine``: a recording `flagcore.Engine` over ``flags``;
- ``flag_client``: a `flagcore_client.FlagClient` stand-in over ``flags`` (no network).

``flagcore_server`` (``flagcore serve`` seeded from ``flags``, for code that uses an
Unleash SDK) is in ``flagcore_http.pytest_server``; enable it with ``pytest_plugins =
["flagcore_http.pytest_server"]`` in the top ``conftest.py``. It is not loaded from here:
the core never imports the HTTP adapter, and loading aiohttp in every pytest run (or
failing where the ``http`` extra is not installed) is not what a flag test kit should do.

Strict mode (a test fails when the code asks for a flag it never defined): mark the test
``@pytest.mark.flagcore_strict``, set ``flagcore_strict = true`` in the pytest
configuration, or set ``flags.strict = True``.

Every pytest run in a project that installs flagcore loads this module, so it imports
nothing of its own at import time: the kit is imported by the fixtures that use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from flagcore.testkit import FakeFlagClient, FlagsBuilder, RecordingEngine

__all__ = ["STRICT_MARKER", "flag_client", "flag_engine", "flags"]

STRICT_MARKER = "flagcore_strict"
_BUILDER = pytest.StashKey["FlagsBuilder"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        STRICT_MARKER,
        "flagcore: fail every test whose code asks for a flag the test never defined",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{STRICT_MARKER}: fail the test if the code under test asks for a flag the test "
        "never defined with the flags fixture (flagcore.testkit)",
    )


@pytest.fixture
def flags(request: pytest.FixtureRequest) -> FlagsBuilder:
    """The flags this test defines; the engines and clients made from them record every
    evaluation (``flags.evaluations``)."""
    from flagcore.testkit import FlagsBuilder

    strict = request.node.get_closest_marker(STRICT_MARKER) is not None or bool(
        request.config.getini(STRICT_MARKER)
    )
    builder = FlagsBuilder(strict=strict)
    request.node.stash[_BUILDER] = builder
    return builder


@pytest.fixture
def flag_engine(flags: FlagsBuilder) -> RecordingEngine:
    """A real engine over ``flags`` that records what it is asked."""
    return flags.engine()


@pytest.fixture
def flag_client(flags: FlagsBuilder) -> FakeFlagClient:
    """Stands in for ``flagcore_client.FlagClient`` over ``flags``, with no server."""
    return flags.client()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """In strict mode, fail a test whose code asked for an undefined flag, even when the
    code caught the `UndefinedFlagError` raised at the call."""
    outcome = yield
    builder = item.stash.get(_BUILDER, None)
    if builder is not None and builder.strict and builder.undefined_flags:
        pytest.fail(
            "flagcore_strict: the code asked for flags this test never defined: "
            + ", ".join(f'"{name}"' for name in builder.undefined_flags),
            pytrace=False,
        )
    return outcome
