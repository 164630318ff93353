"""Test data for code that uses flags: a builder, a recording engine and a client double.

A test says which flags exist and how they answer (on, off, on for some users, on for a
share of them, with variants and payloads, or loaded from a client-features snapshot or
an Unleash feature export); the code under test gets a real `flagcore.Engine` over that
data (or a `flagcore_client.FlagClient`-compatible double over the same engine), so the
test exercises the real evaluation, not a stub. Every evaluation is recorded (flag,
context, answer) so a test can check that the code asked with the right context; in
strict mode, asking for a flag the test never defined fails the test.

Pure: no I/O beyond reading a JSON file the caller names. It works in pytest (through
`flagcore.pytest_plugin`'s ``flags`` fixture), in unittest and in doctest:

>>> from flagcore.testkit import FlagsBuilder
>>> flags = FlagsBuilder().enable("checkout").enable_for_users("beta", "42")
>>> engine = flags.engine()
>>> engine.is_enabled("checkout"), engine.is_enabled("beta", {"userId": "7"})
(True, False)
>>> [(e.flag, e.context.user_id, e.answer) for e in flags.evaluations]
[('checkout', None, True), ('beta', '7', False)]

The builder (`flagcore.testkit_builder`), the recording engine
(`flagcore.testkit_recording`) and the client double (`flagcore.testkit_client`) live in
a module each; this one is where tests import them from.
"""

from __future__ import annotations

from flagcore.testkit_builder import FlagsBuilder, seed_service, variant
from flagcore.testkit_client import FakeFlagClient
from flagcore.testkit_recording import Evaluation, RecordingEngine, UndefinedFlagError

__all__ = [
    "Evaluation",
    "FakeFlagClient",
    "FlagsBuilder",
    "RecordingEngine",
    "UndefinedFlagError",
    "seed_service",
    "variant",
]
