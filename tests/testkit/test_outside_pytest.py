"""The builder outside pytest: in a unittest TestCase and in doctests."""

from __future__ import annotations

import doctest
import io
import unittest

import flagcore.testkit


def banner(flags: object, user_id: str) -> str:
    """Code under test: the banner a user sees."""
    variant = flags.get_variant("banner", {"userId": user_id})  # type: ignore[attr-defined]
    return variant.payload["value"] if variant.enabled else "none"


class BannerTest(unittest.TestCase):
    """How a unittest suite uses the kit: a builder per test, made in setUp (unittest's
    own assertions on purpose: this is what a unittest user writes)."""

    def setUp(self) -> None:
        self.flags = flagcore.testkit.FlagsBuilder(strict=True)

    def test_beta_users_see_the_new_banner(self) -> None:
        self.flags.enable_for_users(
            "banner", "42", variants=[flagcore.testkit.variant("new", "Hello!")]
        )
        client = self.flags.client(app_name="web")
        self.assertEqual(banner(client, "42"), "Hello!")  # noqa: PT009
        self.assertEqual(banner(client, "7"), "none")  # noqa: PT009
        self.assertTrue(self.flags.asked("banner", userId="42", appName="web"))  # noqa: PT009

    def test_an_undefined_flag_fails_a_strict_test(self) -> None:
        with self.assertRaises(flagcore.testkit.UndefinedFlagError):  # noqa: PT027
            banner(self.flags.engine(), "42")


def test_the_kit_works_in_a_unittest_suite() -> None:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(BannerTest)
    outcome = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    assert outcome.testsRun == 2
    assert outcome.wasSuccessful(), outcome.failures + outcome.errors


DOCTEST = """
>>> from flagcore.testkit import FlagsBuilder, variant
>>> flags = FlagsBuilder().rollout("search", 100, variants=[variant("fast", {"k": 1})])
>>> client = flags.client(app_name="docs")
>>> client.get_variant("search", {"userId": "1"}).payload
{'type': 'json', 'value': '{"k":1}'}
>>> flags.asked("search", appName="docs", userId="1")
True
>>> flags.engine().is_enabled("search", {"userId": "2"})
True
"""


def test_the_kit_works_in_doctests() -> None:
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner()
    runner.run(parser.get_doctest(DOCTEST, {}, "kit-example", None, 0), out=io.StringIO().write)
    # The module's own docstring example, as a user reads it in help(flagcore.testkit).
    for test in doctest.DocTestFinder().find(flagcore.testkit):
        runner.run(test, out=io.StringIO().write)
    results = runner.summarize(verbose=False)
    assert results.failed == 0
    assert results.attempted >= 10


def test_a_failing_doctest_is_reported() -> None:
    wrong = DOCTEST.replace("True\n>>> flags.engine()", "False\n>>> flags.engine()")
    runner = doctest.DocTestRunner()
    runner.run(doctest.DocTestParser().get_doctest(wrong, {}, "wrong", None, 0), out=lambda _: None)
    assert runner.summarize(verbose=False).failed == 1
