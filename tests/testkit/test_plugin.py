"""The pytest plugin, as a user's test suite sees it (run with pytester)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

CODE_UNDER_TEST = """
def checkout_button(flags, user_id):
    if flags.is_enabled("new-checkout", {"userId": user_id, "properties": {"plan": "pro"}}):
        return "new"
    return "old"

def swallowing(flags):
    try:
        return flags.is_enabled("typo-flag")
    except Exception:
        return False
"""


# pytest-asyncio (installed here, not needed by the kit) warns without this setting.
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(shop=CODE_UNDER_TEST)
    pytester.syspathinsert()
    return pytester


def test_the_fixtures_come_with_the_package_and_record_the_context(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_shop="""
        from shop import checkout_button

        def test_new_checkout_for_beta_users(flags, flag_engine):
            flags.enable_for_users("new-checkout", "42")
            assert checkout_button(flag_engine, "42") == "new"
            assert checkout_button(flag_engine, "7") == "old"
            assert flags.asked("new-checkout", userId="42", plan="pro")
            assert [e.answer for e in flags.evaluations] == [True, False]

        def test_the_client_double(flags, flag_client):
            flags.enable("new-checkout")
            assert checkout_button(flag_client, "1") == "new"
            assert flags.evaluations[0].context.app_name == "tests"

        def test_each_test_starts_with_no_flags(flags, flag_engine):
            assert flags.snapshot().features == () and flags.evaluations == ()
        """
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_a_strict_test_fails_when_the_code_asks_for_an_undefined_flag(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_shop="""
        import pytest
        from shop import checkout_button, swallowing

        @pytest.mark.flagcore_strict
        def test_strict_and_raised(flags, flag_engine):
            checkout_button(flag_engine, "1")

        @pytest.mark.flagcore_strict
        def test_strict_even_when_the_code_swallows_the_error(flags, flag_engine):
            flags.enable("new-checkout")
            assert swallowing(flag_engine) is False

        @pytest.mark.flagcore_strict
        def test_strict_and_defined(flags, flag_engine):
            flags.disable("new-checkout")
            assert checkout_button(flag_engine, "1") == "old"

        def test_not_strict(flags, flag_engine):
            assert checkout_button(flag_engine, "1") == "old"
            assert flags.undefined_flags == ("new-checkout",)
        """
    )
    result = project.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            '*UndefinedFlagError: the code asked for flag "new-checkout", which this test never*',
            "*test_strict_even_when_the_code_swallows_the_error*",
            'flagcore_strict: the code asked for flags this test never defined: "typo-flag"',
        ]
    )


def test_strict_mode_for_a_whole_suite_from_the_configuration(project: pytest.Pytester) -> None:
    project.makeini(INI + "flagcore_strict = true\n")
    project.makepyfile(
        test_shop="""
        from shop import checkout_button

        def test_undefined(flags, flag_engine):
            checkout_button(flag_engine, "1")

        def test_defined(flags, flag_engine):
            flags.enable("new-checkout")
            assert checkout_button(flag_engine, "1") == "new"
        """
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)


def test_the_marker_is_registered(project: pytest.Pytester) -> None:
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.flagcore_strict: fail the test if*"])


def test_loading_the_plugin_imports_nothing_of_the_kit_or_the_server() -> None:
    # pytest loads the plugin in every run of every project that installs flagcore.
    probe = (
        "import sys, json, flagcore; before = set(sys.modules);"
        "import flagcore.pytest_plugin;"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = json.loads(output)
    heavy = ("flagcore.testkit", "flagcore_http", "flagcore_client", "aiohttp", "sqlite")
    assert [m for m in loaded if m.startswith(heavy)] == []
    assert "flagcore.pytest_plugin" in loaded
