"""The real JavaScript clients of issue #17 against a real flagcore server.

Unleash's browser SDK (``unleash-proxy-client``) on the Frontend API, and OpenFeature's
OFREP providers (``@openfeature/ofrep-provider`` with ``@openfeature/server-sdk``,
``@openfeature/ofrep-web-provider`` with ``@openfeature/web-sdk``) on OFREP, all pinned
in ``tests/http/node_frontend/package-lock.json`` and run by the machine's ``node`` (20+
has ``fetch``). A session fixture runs ``npm ci`` when ``node_modules`` is missing; by
hand: ``cd tests/http/node_frontend && npm ci``. The scripts print JSON lines that these
tests read; the server is the aiohttp test server over a SQLite file, and writes go
through the same `Service` the server uses.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from flagcore.model import Constraint, Payload, Strategy, Variant
from flagcore.service import Service
from tests.http.conftest import ADMIN, CLIENT, Api
from tests.node_packages import installed

NODE_DIR = Path(__file__).parent / "node_frontend"
FRONTEND = "default:development.frontend-secret-for-js-clients"
LINE_TIMEOUT_S = 20.0


def install_node_frontend() -> Path:
    """``tests/http/node_frontend`` with its ``node_modules`` (``npm ci`` when missing)."""
    return installed(NODE_DIR, "unleash-proxy-client", "JS client")


@pytest.fixture(scope="session")
def node_frontend() -> Path:
    return install_node_frontend()


def _flag(service: Service, name: str, *variants: Variant, **strategy: Any) -> None:
    service.flags.create_flag("default", name)
    service.strategies.add_strategy(
        "default", name, "development", Strategy("default", {}, **strategy)
    )
    service.environments.set_environment_enabled("default", name, "development", True)
    if variants:
        service.variants.set_flag_variants("default", name, "development", list(variants))


@pytest.fixture
def flags(service: Service) -> Service:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    _flag(service, "checkout", constraints=(Constraint("userId", "IN", ("alice",)),))
    _flag(service, "pro-only", constraints=(Constraint("plan", "IN", ("pro",)),))
    _flag(service, "team-only", constraints=(Constraint("plan", "IN", ("team",)),))
    _flag(service, "banner", Variant("wide", 1000, payload=Payload("string", "Hello")))
    _flag(service, "retries", Variant("three", 1000, payload=Payload("number", "3")))
    _flag(service, "layout", Variant("grid", 1000, payload=Payload("json", '{"columns": 3}')))
    service.flags.create_flag("default", "dormant")  # never enabled
    return service


class NodeScript:
    """A node script in a subprocess beside the test server; its JSON lines, in order."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.seen: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, folder: Path, script: str, **variables: str) -> NodeScript:
        process = await asyncio.create_subprocess_exec(
            "node",
            str(folder / script),
            cwd=folder,
            env={**os.environ, **variables},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def next_line(self) -> Any:
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), LINE_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"no output within {LINE_TIMEOUT_S} s; saw {self.seen}") from None
        if not line:
            assert self.process.stderr is not None
            errors = (await self.process.stderr.read()).decode()
            raise AssertionError(f"the script ended: {errors[-2000:]}; saw {self.seen}")
        event = json.loads(line)
        self.seen.append(event)
        return event

    async def wait_for(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next line ``wanted`` accepts (bounded: each line within LINE_TIMEOUT_S)."""
        for _ in range(500):
            event = await self.next_line()
            if wanted(event):
                return event
        raise AssertionError(f"never seen; saw {self.seen[-20:]}")

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
        await asyncio.wait_for(self.process.wait(), 10)


@pytest.fixture
async def scripts() -> AsyncIterator[list[NodeScript]]:
    started: list[NodeScript] = []
    yield started
    for script in started:
        await script.stop()


async def _run(
    started: list[NodeScript], folder: Path, script: str, **variables: str
) -> NodeScript:
    running = await NodeScript.start(folder, script, **variables)
    started.append(running)
    return running


def _errors(script: NodeScript) -> list[dict[str, Any]]:
    return [event for event in script.seen if event["event"] == "error"]


# Unleash's browser SDK on the Frontend API.

PROXY_FLAGS = "checkout,pro-only,team-only,banner,layout,dormant"


@pytest.mark.parametrize("post", ["0", "1"], ids=["GET", "POST"])
async def test_unleash_browser_sdk_reads_flags_and_variants_for_its_context(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript], post: str
) -> None:
    sdk = await _run(
        scripts,
        node_frontend,
        "proxy_client.js",
        FLAGCORE_URL=str(api.client.make_url("/api/frontend")),
        FLAGCORE_TOKEN=FRONTEND,
        FLAGCORE_FLAGS=PROXY_FLAGS,
        FLAGCORE_POST=post,
    )
    ready = await sdk.wait_for(lambda event: event["event"] == "ready")
    state = ready["state"]
    enabled = {name: answer["enabled"] for name, answer in state.items()}
    # The SDK's context is userId alice, plan pro.
    assert enabled == {
        "checkout": True,
        "pro-only": True,
        "team-only": False,
        "banner": True,
        "layout": True,
        "dormant": False,
    }
    assert state["banner"]["variant"] == {
        "name": "wide",
        "enabled": True,
        "payload": {"type": "string", "value": "Hello"},
        "feature_enabled": True,
        "featureEnabled": True,
    }
    assert state["layout"]["variant"]["payload"] == {"type": "json", "value": '{"columns": 3}'}
    assert state["checkout"]["variant"]["name"] == "disabled"
    assert state["checkout"]["variant"]["feature_enabled"] is True
    # A flag the context does not get is the SDK's own "disabled" variant.
    assert state["team-only"]["variant"] == {
        "name": "disabled",
        "enabled": False,
        "feature_enabled": False,
    }
    fetched = [e for e in sdk.seen if e["event"] == "http" and e["path"] == "/api/frontend"]
    assert fetched[0]["method"] == ("POST" if post == "1" else "GET")
    assert fetched[0]["status"] == 200
    assert _errors(sdk) == []


async def test_unleash_browser_sdk_polls_with_etag_and_sees_a_write_on_its_next_refresh(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript]
) -> None:
    sdk = await _run(
        scripts,
        node_frontend,
        "proxy_client.js",
        FLAGCORE_URL=str(api.client.make_url("/api/frontend")),
        FLAGCORE_TOKEN=FRONTEND,
        FLAGCORE_FLAGS=PROXY_FLAGS,
    )
    await sdk.wait_for(lambda event: event["event"] == "ready")
    # Unchanged flags: the SDK's next poll sends the ETag back and gets 304, no update.
    await sdk.wait_for(
        lambda event: (
            event["event"] == "http" and event["path"] == "/api/frontend" and event["status"] == 304
        )
    )
    flags.environments.set_environment_enabled("default", "checkout", "development", False)
    flags.environments.set_environment_enabled("default", "team-only", "development", False)
    _flag(flags, "fresh")
    update = await sdk.wait_for(lambda event: event["event"] == "update")
    assert update["state"]["checkout"]["enabled"] is False
    assert update["state"]["pro-only"]["enabled"] is True
    answers = [e for e in sdk.seen if e["event"] == "http" and e["path"] == "/api/frontend"]
    assert [a["status"] for a in answers[-2:]] == [304, 200]
    assert _errors(sdk) == []


async def test_unleash_browser_sdk_metrics_are_recorded_by_the_service(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript]
) -> None:
    sdk = await _run(
        scripts,
        node_frontend,
        "proxy_client.js",
        FLAGCORE_URL=str(api.client.make_url("/api/frontend")),
        FLAGCORE_TOKEN=FRONTEND,
        FLAGCORE_FLAGS=PROXY_FLAGS,
    )
    # Each report evaluates every flag (isEnabled and getVariant), so metrics have counts.
    await sdk.wait_for(lambda event: event["event"] == "ready")
    posted = await sdk.wait_for(
        lambda event: event["event"] == "http" and event["path"] == "/api/frontend/client/metrics"
    )
    assert posted["status"] == 200, sdk.seen
    sent = await sdk.wait_for(lambda event: event["event"] == "sent")
    assert sent["appName"] == "web-shop"
    await api.usage_written()
    counted = flags.metrics.flag_metrics("banner")
    assert counted, "the SDK's metrics post was answered 200 but nothing was counted"
    assert {row.app_name for row in counted} == {"web-shop"}
    assert sum(row.yes for row in counted) >= 1
    assert sum(row.no for row in counted) == 0
    team = flags.metrics.flag_metrics("team-only")
    assert sum(row.no for row in team) >= 1
    assert sum(row.yes for row in team) == 0
    # The SDK never registers (3.8 has no register call): its metrics make it known.
    seen = [(i.app_name, i.instance_id, i.environment) for i in flags.instances.client_instances()]
    assert ("web-shop", "browser", "development") in seen
    assert _errors(sdk) == []


async def test_unleash_browser_sdk_with_a_client_token_gets_an_error_not_flags(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript]
) -> None:
    sdk = await _run(
        scripts,
        node_frontend,
        "proxy_client.js",
        FLAGCORE_URL=str(api.client.make_url("/api/frontend")),
        FLAGCORE_TOKEN=CLIENT,
        FLAGCORE_FLAGS=PROXY_FLAGS,
    )
    error = await sdk.wait_for(lambda event: event["event"] == "error")
    assert json.loads(error["error"]) == {"type": "HttpError", "code": 403}
    assert not [e for e in sdk.seen if e["event"] == "ready"]


# OpenFeature's server SDK with the OFREP provider.

OFREP_ASK = [
    ["boolean", "checkout", False],
    ["boolean", "team-only", True],
    ["string", "banner", "none"],
    ["number", "retries", 0],
    ["object", "layout", {}],
    ["boolean", "no-such-flag", True],
    ["number", "banner", 7],
]


def _by_flag(answers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_flag: dict[str, dict[str, Any]] = {}
    for answer in answers:
        by_flag.setdefault(answer["flag"], answer)  # the first ask of each flag
    return by_flag


@pytest.mark.parametrize(
    ("header", "token"),
    [("Authorization", CLIENT), ("X-API-Key", CLIENT), ("Authorization", FRONTEND)],
    ids=["client-token", "x-api-key", "frontend-token"],
)
async def test_openfeature_server_provider_evaluates_typed_values_over_ofrep(
    api: Api,
    flags: Service,
    node_frontend: Path,
    scripts: list[NodeScript],
    header: str,
    token: str,
) -> None:
    script = await _run(
        scripts,
        node_frontend,
        "ofrep_server.js",
        FLAGCORE_URL=str(api.client.make_url("/")).rstrip("/"),
        FLAGCORE_TOKEN=token,
        FLAGCORE_HEADER=header,
        FLAGCORE_CONTEXT=json.dumps({"targetingKey": "alice", "plan": "pro"}),
        FLAGCORE_ASK=json.dumps(OFREP_ASK),
    )
    answers = await script.next_line()
    by_flag = _by_flag(answers)
    assert by_flag["checkout"] | {"errorMessage": None} == {
        "flag": "checkout",
        "value": True,
        "variant": "enabled",
        "reason": "TARGETING_MATCH",
        "errorCode": None,
        "errorMessage": None,
    }
    assert (by_flag["team-only"]["value"], by_flag["team-only"]["reason"]) == (False, "DISABLED")
    assert (by_flag["banner"]["value"], by_flag["banner"]["variant"]) == ("Hello", "wide")
    assert (by_flag["retries"]["value"], by_flag["retries"]["variant"]) == (3, "three")
    assert by_flag["layout"]["value"] == {"columns": 3}
    missing = by_flag["no-such-flag"]
    assert (missing["value"], missing["reason"], missing["errorCode"]) == (
        True,
        "ERROR",
        "FLAG_NOT_FOUND",
    )
    mistyped = answers[-1]
    assert (mistyped["value"], mistyped["errorCode"]) == (7, "TYPE_MISMATCH")


async def test_openfeature_server_provider_with_an_admin_token_gets_defaults(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript]
) -> None:
    script = await _run(
        scripts,
        node_frontend,
        "ofrep_server.js",
        FLAGCORE_URL=str(api.client.make_url("/")).rstrip("/"),
        FLAGCORE_TOKEN=ADMIN,
        FLAGCORE_CONTEXT=json.dumps({"targetingKey": "alice"}),
        FLAGCORE_ASK=json.dumps([["boolean", "checkout", False]]),
    )
    [answer] = await script.next_line()
    assert (answer["value"], answer["reason"]) == (False, "ERROR")
    assert answer["errorCode"] == "GENERAL"


# OpenFeature's web SDK with the OFREP web provider: bulk evaluation, ETag, polling.

WEB_ASK = [
    ["boolean", "checkout", False],
    ["boolean", "dormant", False],
    ["string", "banner", "none"],
    ["number", "retries", 0],
    ["object", "layout", {}],
    ["boolean", "no-such-flag", True],
]


async def test_openfeature_web_provider_loads_the_bulk_answer_and_polls_with_etag(
    api: Api, flags: Service, node_frontend: Path, scripts: list[NodeScript]
) -> None:
    web = await _run(
        scripts,
        node_frontend,
        "ofrep_web.js",
        FLAGCORE_URL=str(api.client.make_url("/")).rstrip("/"),
        FLAGCORE_TOKEN=FRONTEND,
        FLAGCORE_CONTEXT=json.dumps({"targetingKey": "alice", "plan": "pro"}),
        FLAGCORE_ASK=json.dumps(WEB_ASK),
    )
    ready = await web.wait_for(lambda event: event["event"] == "ready")
    by_flag = _by_flag(ready["answers"])
    assert (by_flag["checkout"]["value"], by_flag["checkout"]["reason"]) == (
        True,
        "TARGETING_MATCH",
    )
    # A frontend token's bulk answer lists only the flags on for it, as the Frontend API
    # does: an off flag reads as the caller's default, not found.
    dormant = by_flag["dormant"]
    assert (dormant["value"], dormant["errorCode"]) == (False, "FLAG_NOT_FOUND")
    assert by_flag["banner"]["value"] == "Hello"
    assert by_flag["retries"]["value"] == 3
    assert by_flag["layout"]["value"] == {"columns": 3}
    missing = by_flag["no-such-flag"]
    assert (missing["value"], missing["errorCode"]) == (True, "FLAG_NOT_FOUND")
    first = web.seen[0]
    assert (first["method"], first["path"], first["status"]) == (
        "POST",
        "/ofrep/v1/evaluate/flags",
        200,
    )
    # Polls send the ETag back: 304 while nothing changes.
    polled = await web.wait_for(lambda event: event["event"] == "http" and event["status"] == 304)
    assert polled["ifNoneMatch"]
    # A write: the next poll gets 200 and the provider says the configuration changed.
    flags.environments.set_environment_enabled("default", "checkout", "development", False)
    changed = await web.wait_for(lambda event: event["event"] == "changed")
    assert _by_flag(changed["answers"])["checkout"]["value"] is False
    assert _errors(web) == []
