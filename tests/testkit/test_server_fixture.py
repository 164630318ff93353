"""``flagcore_server``: code that uses an Unleash SDK, tested against ``flagcore serve``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flagcore import Flag, InvalidInput, NotFound, Strategy
from flagcore.testkit import FlagsBuilder
from flagcore_http.pytest_server import start_server

pytest_plugins = ["pytester"]

DATA = Path(__file__).parent / "data"

CONFTEST = """
pytest_plugins = ["flagcore_http.pytest_server"]
"""

SDK_TESTS = """
import json
from pathlib import Path

from UnleashClient import UnleashClient

from flagcore import Constraint, Flag, Segment, Strategy
from flagcore.testkit import variant


def sdk(server, cache):
    client = UnleashClient(
        url=server.api_url,
        app_name="shop",
        custom_headers={"Authorization": server.client_token},
        cache_directory=str(cache),
        disable_metrics=True,
        disable_registration=True,
    )
    client.initialize_client()
    return client


def contexts():
    for n in range(150):
        yield {
            "userId": f"user-{n}",
            "sessionId": f"session-{n}",
            "properties": {"country": ("NO", "SE", "DK")[n % 3], "tenantId": f"t-{n % 7}"},
        }


def test_the_sdk_answers_as_the_builder_engine(flags, flagcore_server, tmp_path):
    flags.enable("everyone").disable("nobody").enable_for_users("beta", "user-3", "user-9")
    flags.rollout(
        "search", 40, stickiness="tenantId",
        variants=[variant("fast", {"k": 1}), variant("safe", "s", weight=300)],
    )
    flags.add_segment(Segment(5, "nordics", (Constraint("country", "IN", ("NO", "DK")),)))
    flags.add(Flag("nordic", enabled=True, strategies=(Strategy("default", segments=(5,)),)))
    server = flagcore_server()
    assert server.url.startswith("http://127.0.0.1:")
    client = sdk(server, tmp_path / "sdk")
    try:
        engine = flags.engine()
        names = ("everyone", "nobody", "beta", "search", "nordic")
        for context in contexts():
            for name in names:
                assert client.is_enabled(name, context) == engine.is_enabled(name, context)
                ours = engine.get_variant(name, context)
                theirs = client.get_variant(name, context)
                assert (theirs["name"], theirs.get("payload")) == (ours.name, ours.payload)
        assert client.is_enabled("beta", {"userId": "user-3"})
        assert not client.is_enabled("beta", {"userId": "user-4"})
    finally:
        client.destroy()


def test_an_unleash_export_served_to_the_sdk_answers_as_unleash_did(
    flags, flagcore_server, tmp_path
):
    data = Path(DATA)
    flags.load_unleash_export(
        data / "unleash-export-sample.json", segments=data / "unleash-segments-sample.json"
    )
    expected = json.loads((data / "unleash-export-sample.expected.json").read_text())
    client = sdk(flagcore_server(), tmp_path / "sdk")
    try:
        for answer in expected["evaluations"]:
            context = expected["contexts"][answer["context"]]
            assert client.is_enabled(answer["flag"], context) is answer["enabled"], answer
            assert client.get_variant(answer["flag"], context)["name"] == answer["variant"]
    finally:
        client.destroy()


def test_changes_through_the_admin_api_reach_the_sdk(flags, flagcore_server, tmp_path):
    flags.enable("checkout")
    server = flagcore_server()
    base = "/api/admin/projects/default/features/checkout"
    server.admin("POST", base + "/environments/development/off")
    client = sdk(server, tmp_path / "sdk")
    try:
        assert not client.is_enabled("checkout")
    finally:
        client.destroy()
"""


def test_code_using_the_unleash_sdk_is_tested_against_flagcore_serve(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_with_sdk=SDK_TESTS.replace("Path(DATA)", f"Path({str(DATA)!r})"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


SUITE_CONFTEST = """
import pytest

pytest_plugins = ["flagcore_http.pytest_server"]


@pytest.fixture
def flagcore_server_settings():
    return {"FLAGCORE_SDK_FETCH_MODE": "streaming"}
"""

SETTINGS_TESTS = """
import socket
import urllib.request

import pytest


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch_mode(server):
    request = urllib.request.Request(
        server.api_url + "/client/features", headers={"Authorization": server.client_token}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.headers.get("fetch-mode")


def test_the_suites_settings_and_a_port_of_our_choosing(flags, flagcore_server):
    flags.enable("checkout")
    port = free_port()
    server = flagcore_server(port=port)
    assert server.url == f"http://127.0.0.1:{port}"
    assert server.api_url == f"http://127.0.0.1:{port}/api"
    assert fetch_mode(server) == "streaming"


def test_one_servers_settings_win_over_the_suites(flagcore_server):
    assert fetch_mode(flagcore_server(settings={"FLAGCORE_SDK_FETCH_MODE": "polling"})) is None


def test_a_name_that_is_no_setting_is_refused_naming_the_nearest(flagcore_server):
    with pytest.raises(ValueError, match="'FLAGCORE_SDK_FETCHMODE' is not a flagcore serve "
                       "setting .did you mean FLAGCORE_SDK_FETCH_MODE."):
        flagcore_server(settings={"FLAGCORE_SDK_FETCHMODE": "streaming"})
    with pytest.raises(ValueError, match="FLAGCORE_DB is the kit's"):
        flagcore_server(settings={"FLAGCORE_DB": "other.db"})
    with pytest.raises(ValueError, match="port=70000"):
        flagcore_server(port=70000)


def test_a_value_the_server_refuses_comes_back_with_the_servers_message(flagcore_server):
    with pytest.raises(RuntimeError, match="FLAGCORE_LOG_LEVEL='loud': use debug, info"):
        flagcore_server(settings={"FLAGCORE_LOG_LEVEL": "loud"})
"""


def test_the_server_fixture_takes_a_port_and_settings_for_the_suite_or_one_server(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_settings=SETTINGS_TESTS)
    # In a pytest process of its own, as a user's suite runs.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_a_flag_the_server_refuses_stops_the_start_with_the_reason(tmp_path: Path) -> None:
    flags = FlagsBuilder().add(Flag("f", enabled=True, strategies=(Strategy("no-such"),)))
    with (
        pytest.raises(InvalidInput, match="unknown strategy 'no-such'"),
        start_server(flags, tmp_path / "server"),
    ):
        pass
    # A missing segment is refused too: the server would answer off where the engine does.
    flags = FlagsBuilder().add(
        Flag("g", enabled=True, strategies=(Strategy("default", segments=(9,)),))
    )
    with (
        pytest.raises(NotFound, match="no segment with id 9"),
        start_server(flags, tmp_path / "s2"),
    ):
        pass


def test_the_builders_custom_strategies_are_defined_on_the_server(tmp_path: Path) -> None:
    flags = FlagsBuilder(custom_strategies={"tenants": lambda params, ctx: True})
    flags.add(Flag("f", enabled=True, strategies=(Strategy("tenants", {"ids": "a,b"}),)))
    with start_server(flags, tmp_path / "server") as server:
        path = "/api/admin/projects/default/features/f"
        strategies = server.admin("GET", path)["environments"][0]["strategies"]
        assert [(s["name"], s["parameters"]) for s in strategies] == [("tenants", {"ids": "a,b"})]


def test_the_server_is_stopped_and_its_files_stay_in_the_directory(tmp_path: Path) -> None:
    flags = FlagsBuilder().enable("checkout")
    with start_server(flags, tmp_path / "server") as server:
        assert server.admin("GET", "/api/admin/projects/default/features/checkout")["name"] == (
            "checkout"
        )
        process = server.process
    assert process.returncode == 0
    assert (tmp_path / "server" / "flagcore.db").exists()
    shutil.rmtree(tmp_path / "server")
