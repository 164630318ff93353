"""Action sets over HTTP on SQLite, in Unleash's shape: CRUD, errors, runs, the event log."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from aiohttp.test_utils import TestClient, TestServer

from flagcore import Engine, Limits
from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from flagcore_store_sqlite.schema import migrations
from tests.http.conftest import ADMIN, CLIENT, Api

ACTIONS = "/api/admin/projects/default/actions"
ENDPOINTS = "/api/admin/signal-endpoints"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """Signals unthrottled, so a test can send many without waiting a second for each."""
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store, limits=Limits(signals_per_second=10_000))
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.tokens.create_token(
        "sdk", "client", projects=["default"], environment="development", secret=CLIENT
    )
    yield service
    store.close()


@pytest.fixture
async def api(service: Service) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


async def _setup(api: Api) -> tuple[int, str]:
    """Two flags in ``default``, and an endpoint ``alerts`` with a token."""
    for name in ("kill-checkout", "banner"):
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": name})
    endpoint = await api.json("POST", ENDPOINTS, 201, json={"name": "alerts"})
    token = await api.json("POST", f"{ENDPOINTS}/{endpoint['id']}/tokens", 201, json={"name": "t"})
    return endpoint["id"], token["token"]


def _body(source_id: int, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "page-kills-checkout",
        "description": "critical alerts turn checkout off",
        "enabled": True,
        "actorId": 7,
        "match": {
            "source": "signal-endpoint",
            "sourceId": source_id,
            "payload": {
                "alert.severity": {"operator": "IN", "values": ["critical"]},
                "alert.service": {
                    "operator": "STR_STARTS_WITH",
                    "values": ["CHECKOUT"],
                    "caseInsensitive": True,
                    "inverted": False,
                },
            },
        },
        "actions": [
            {
                "action": "TOGGLE_FEATURE_ON",
                "sortOrder": 1,
                "executionParams": {
                    "project": "default",
                    "featureName": "kill-checkout",
                    "environment": "development",
                },
            },
            {
                "action": "MARK_FEATURE_STALE",
                "sortOrder": 2,
                "executionParams": {"project": "default", "featureName": "banner"},
            },
        ],
    }
    body.update(overrides)
    return body


async def _signal(api: Api, token: str, payload: Any) -> int:
    response = await api.request(
        "POST",
        "/api/signal-endpoint/alerts",
        token=None,
        headers={"Authorization": f"Bearer {token}"},
        json=payload,
    )
    assert response.status == 202, await response.text()
    return int((await response.json())["id"])


async def _runs(api: Api, action_set_id: int, query: str = "") -> list[dict[str, Any]]:
    body = await api.json("GET", f"{ACTIONS}/{action_set_id}/events{query}")
    return list(body["actionSetEvents"])


async def _wait_for_runs(
    api: Api, action_set_id: int, count: int, within: float
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while True:
        runs = await _runs(api, action_set_id, "?limit=1000")
        if len(runs) >= count or time.monotonic() > deadline:
            return runs
        await asyncio.sleep(0.02)


async def test_an_action_set_round_trips_in_unleash_shape(api: Api) -> None:
    source_id, _token = await _setup(api)
    body = _body(source_id)
    created = await api.json("POST", ACTIONS, 201, json=body)
    assert isinstance(created["id"], int)
    assert created["project"] == "default"
    assert created["createdAt"].endswith("Z")
    expected_payload = {
        "alert.severity": {
            "operator": "IN",
            "values": ["critical"],
            "inverted": False,
            "caseInsensitive": False,
        },
        "alert.service": {
            "operator": "STR_STARTS_WITH",
            "values": ["CHECKOUT"],
            "inverted": False,
            "caseInsensitive": True,
        },
    }
    assert created["match"] == {**body["match"], "payload": expected_payload}
    for key in ("name", "description", "enabled", "actorId", "actions"):
        assert created[key] == body[key]
    path = f"{ACTIONS}/{created['id']}"
    assert await api.json("GET", path) == created
    assert await api.json("GET", ACTIONS) == {"actions": [created]}

    # PUT replaces; actions come back in sortOrder, the order they run in.
    swapped = [
        {**body["actions"][0], "sortOrder": 2},
        {**body["actions"][1], "sortOrder": 1},
    ]
    changed = _body(source_id, name="renamed", actions=swapped, description=None)
    updated = await api.json("PUT", path, json=changed)
    assert updated["name"] == "renamed"
    assert updated["description"] is None
    assert [a["action"] for a in updated["actions"]] == ["MARK_FEATURE_STALE", "TOGGLE_FEATURE_ON"]
    assert updated["id"] == created["id"]
    assert updated["createdAt"] == created["createdAt"]

    await api.json("POST", f"{path}/off")
    assert (await api.json("GET", path))["enabled"] is False
    await api.json("POST", f"{path}/on")
    assert (await api.json("GET", path))["enabled"] is True
    await api.json("DELETE", path)
    await api.json("GET", path, 404)
    await api.json("GET", f"{path}/events", 404)


async def test_value_operators_take_unleash_single_value(api: Api) -> None:
    source_id, _token = await _setup(api)
    body = _body(source_id)
    body["match"]["payload"] = {"cpu": {"operator": "NUM_GT", "value": "90"}}
    created = await api.json("POST", ACTIONS, 201, json=body)
    assert created["match"]["payload"]["cpu"]["value"] == "90"


@pytest.mark.parametrize(
    ("change", "status", "path"),
    [
        (lambda b: b["actions"][0].pop("sortOrder"), 400, "$.actions[0].sortOrder"),
        (lambda b: b["actions"][0]["executionParams"].pop("featureName"), 400, "featureName"),
        (lambda b: b["actions"][0].update(action="EXPLODE"), 400, "$.actions[0].action"),
        (lambda b: b["actions"][0].update(sortOrder="1"), 400, "$.actions[0].sortOrder"),
        (lambda b: b["actions"][0].update(sortOrder=0), 400, "$.actions[0].sortOrder"),
        (lambda b: b["match"].update(source="webhook"), 400, "$.match.source"),
        (lambda b: b["match"].update(sourceId="1"), 400, "$.match.sourceId"),
        (lambda b: b["match"].update(sourceId=999), 404, "$.match.sourceId"),
        (lambda b: b.update(actorId=0), 400, "$.actorId"),
        (lambda b: b.update(enabled="yes"), 400, "$.enabled"),
        (lambda b: b.pop("match"), 400, "$.match"),
        (lambda b: b.update(actions=[]), 400, "$.actions"),
        (
            lambda b: b["actions"][0]["executionParams"].update(project="other"),
            400,
            "$.actions[0].executionParams.project",
        ),
        (
            lambda b: b["actions"][0]["executionParams"].pop("environment"),
            400,
            "$.actions[0].executionParams.environment",
        ),
        (
            lambda b: b["actions"][0]["executionParams"].update(featureName="nope"),
            404,
            "$.actions[0].executionParams.featureName",
        ),
        (
            lambda b: b["match"]["payload"].update(x={"operator": "NOPE", "values": ["a"]}),
            400,
            "$.match.payload['x']",
        ),
        (
            lambda b: b["match"]["payload"].update(x={"operator": "REGEX", "value": "("}),
            400,
            "$.match.payload['x']",
        ),
        (
            lambda b: b["match"]["payload"].update(x={"operator": "IN", "values": [1]}),
            400,
            "$.match.payload",
        ),
        (
            lambda b: b["match"]["payload"].update({"": {"operator": "IN", "values": ["a"]}}),
            400,
            "$.match.payload['']",
        ),
    ],
)
async def test_a_bad_body_answers_with_the_path_and_stores_nothing(
    api: Api, service: Service, change: Any, status: int, path: str
) -> None:
    source_id, _token = await _setup(api)
    body = _body(source_id)
    change(body)
    refused = await api.json("POST", ACTIONS, status, json=body)
    assert set(refused) == {"name", "message", "details"}
    assert any(path in (d.get("path") or "") for d in refused["details"]), refused
    assert service.actions.list_action_sets() == []


async def test_names_are_unique_in_a_project_and_limits_hold(api: Api, service: Service) -> None:
    source_id, _token = await _setup(api)
    await api.json("POST", ACTIONS, 201, json=_body(source_id))
    taken = await api.json("POST", ACTIONS, 409, json=_body(source_id))
    assert taken["name"] == "NameConflictError" or "name" in taken["message"]
    for index in range(service.limits.action_sets_per_project - 1):
        await api.json("POST", ACTIONS, 201, json=_body(source_id, name=f"set-{index}"))
    over = await api.json("POST", ACTIONS, 400, json=_body(source_id, name="one-too-many"))
    # One action set too many: the detail names the limit, its path is the whole body.
    assert [d["path"] for d in over["details"]] == ["$"]
    assert "action_sets_per_project" in over["details"][0]["message"]


async def test_a_matching_signal_runs_the_set_once_within_a_second(api: Api) -> None:
    source_id, token = await _setup(api)
    created = await api.json("POST", ACTIONS, 201, json=_body(source_id))
    await _signal(api, token, {"alert": {"severity": "low", "service": "checkout"}})
    await _signal(api, token, {"alert": {"severity": "critical", "service": "search"}})
    started = time.monotonic()
    signal_id = await _signal(
        api, token, {"alert": {"severity": "critical", "service": "Checkout-EU"}, "n": [1]}
    )
    (run,) = await _wait_for_runs(api, created["id"], 1, within=1.0)
    assert time.monotonic() - started < 1.0
    assert run["actionSetId"] == created["id"]
    assert run["signalId"] == signal_id
    assert run["state"] == "success"
    assert run["signal"]["id"] == signal_id
    assert run["signal"]["source"] == "signal-endpoint"
    assert run["signal"]["sourceId"] == source_id
    assert run["signal"]["payload"]["alert"]["service"] == "Checkout-EU"
    ran = run["actionSet"]
    assert ran["name"] == created["name"]
    assert ran["match"] == created["match"]
    assert [(a["action"], a["state"], a["details"]) for a in ran["actions"]] == [
        ("TOGGLE_FEATURE_ON", "success", None),
        ("MARK_FEATURE_STALE", "success", None),
    ]
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    engine = Engine.from_client_features(payload)
    assert engine.is_enabled("kill-checkout", {"userId": "u"})
    flags = {f["name"]: f for f in payload["features"]}
    assert flags["banner"]["stale"] is True
    for flag in ("kill-checkout", "banner"):
        events = await api.json("GET", f"/api/admin/events?feature={flag}")
        changes = [e for e in events["events"] if e["type"] != "feature-created"]
        assert {e["createdBy"] for e in changes} == {"action-set:page-kills-checkout"}
    await asyncio.sleep(0.3)  # time for a second run, were there one
    assert len(await _runs(api, created["id"])) == 1


async def test_concurrent_matching_signals_each_run_the_set_exactly_once(api: Api) -> None:
    source_id, token = await _setup(api)
    body = _body(source_id)
    body["match"]["payload"] = {"n": {"operator": "NUM_GTE", "value": "0"}}
    created = await api.json("POST", ACTIONS, 201, json=body)
    sent = await asyncio.gather(*(_signal(api, token, {"n": n}) for n in range(12)))
    await _signal(api, token, {"n": -1})
    runs = await _wait_for_runs(api, created["id"], 12, within=10.0)
    assert sorted(r["signalId"] for r in runs) == sorted(sent)
    await asyncio.sleep(0.3)
    assert len(await _runs(api, created["id"], "?limit=1000")) == 12
    page = await _runs(api, created["id"], "?limit=5&offset=10")
    assert [r["id"] for r in page] == sorted((r["id"] for r in runs), reverse=True)[10:]
    await api.json("GET", f"{ACTIONS}/{created['id']}/events?limit=0", 400)
    await api.json("GET", f"{ACTIONS}/{created['id']}/events?offset=-1", 400)


async def test_a_failed_action_is_logged_and_the_rest_are_not_started(api: Api) -> None:
    source_id, token = await _setup(api)
    body = _body(source_id)
    body["match"]["payload"] = {}
    body["actions"].insert(
        0,
        {
            "action": "TOGGLE_FEATURE_OFF",
            "sortOrder": 1,
            "executionParams": {
                "project": "default",
                "featureName": "banner",
                "environment": "production",
            },
        },
    )
    body["actions"][1]["sortOrder"] = 2
    body["actions"][2]["sortOrder"] = 3
    created = await api.json("POST", ACTIONS, 201, json=body)
    await api.json("DELETE", "/api/admin/projects/default/features/banner", 202)
    await _signal(api, token, None)
    (run,) = await _wait_for_runs(api, created["id"], 1, within=5.0)
    assert run["state"] == "failed"
    states = [(a["action"], a["state"]) for a in run["actionSet"]["actions"]]
    assert states == [
        ("TOGGLE_FEATURE_OFF", "failed"),
        ("TOGGLE_FEATURE_ON", "not started"),
        ("MARK_FEATURE_STALE", "not started"),
    ]
    assert "banner" in run["actionSet"]["actions"][0]["details"]
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    assert not Engine.from_client_features(payload).is_enabled("kill-checkout", {})


async def test_matching_waits_on_its_own_executor_while_the_store_keeps_answering(
    api: Api,
) -> None:
    """Filters are evaluated beside the store thread, never on it."""
    source_id, token = await _setup(api)
    created = await api.json("POST", ACTIONS, 201, json=_body(source_id))
    loop = asyncio.get_running_loop()
    release = threading.Event()
    blockers = [loop.run_in_executor(None, release.wait) for _ in range(64)]
    try:
        await _signal(api, token, {"alert": {"severity": "critical", "service": "checkout"}})
        started = time.monotonic()
        for _ in range(5):  # each of these is a store call
            await api.json("GET", ACTIONS)
            await api.json("GET", f"{ENDPOINTS}/{source_id}/signals")
        assert time.monotonic() - started < 5.0
        assert await _runs(api, created["id"]) == []
    finally:
        release.set()
        await asyncio.gather(*blockers)
    assert len(await _wait_for_runs(api, created["id"], 1, within=5.0)) == 1


async def test_action_sets_stored_before_m004_are_served_in_unleash_shape(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrations.apply(db, stop_before="m004_unleash_action_sets")
    now = "2026-01-01T00:00:00+00:00"
    db.execute("INSERT INTO projects VALUES ('default', 'Default', NULL, ?)", [now])
    db.execute("INSERT INTO signal_endpoints VALUES (1, 'alerts', NULL, 1, ?)", [now])
    db.execute("INSERT INTO signals VALUES (1, 1, NULL, ?, ?)", [json.dumps({"s": "x"}), now])
    old_actions = [
        {"kind": "ENABLE_FLAG", "flag": "f", "environment": "development"},
        {"kind": "MARK_STALE", "flag": "f", "environment": None},
    ]
    good = {
        "actions": old_actions,
        "filters": [{"contextName": "payload.a.b", "operator": "IN", "values": ["1"]}],
        "enabled": True,
        "description": "kept",
    }
    twice = {
        **good,
        "filters": [
            {"contextName": "payload.s", "operator": "IN", "values": ["1"]},
            {"contextName": "payload.s", "operator": "IN", "values": ["2"]},
        ],
    }
    for set_id, name, body in ((1, "good", good), (2, "twice", twice)):
        db.execute(
            "INSERT INTO action_sets VALUES (?, ?, 'default', 1, ?, ?)",
            [set_id, name, json.dumps(body), now],
        )
    outcomes = [{"action": old_actions[0], "ok": False, "error": "no flag"}]
    db.execute(
        "INSERT INTO action_executions VALUES (1, 1, 1, 0, ?, ?)", [json.dumps(outcomes), now]
    )
    db.conn.commit()
    db.close()

    store = SqliteStore(path)
    try:
        service = Service(store)
        service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
        app = create_app(service, ServerConfig())
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            api = Api(client)
            listed = {a["name"]: a for a in (await api.json("GET", ACTIONS))["actions"]}
            assert listed["good"]["enabled"] is True
            assert listed["good"]["match"]["payload"] == {
                "a.b": {
                    "operator": "IN",
                    "values": ["1"],
                    "inverted": False,
                    "caseInsensitive": False,
                }
            }
            assert [(a["action"], a["sortOrder"]) for a in listed["good"]["actions"]] == [
                ("TOGGLE_FEATURE_ON", 1),
                ("MARK_FEATURE_STALE", 2),
            ]
            assert listed["twice"]["enabled"] is False
            assert list(listed["twice"]["match"]["payload"]) == ["s"]
            assert '"values": ["2"]' in listed["twice"]["description"]
            (run,) = await _runs(api, 1)
            assert run["state"] == "failed"
            assert run["signal"]["payload"] == {"s": "x"}
            assert [(a["state"], a["details"]) for a in run["actionSet"]["actions"]] == [
                ("failed", "no flag"),
                ("not started", None),
            ]
    finally:
        store.close()


async def test_the_action_catalogue_lists_each_action_with_its_options(api: Api) -> None:
    await _setup(api)
    catalogue = await api.json("GET", f"{ACTIONS}/config")
    assert set(catalogue) == {"TOGGLE_FEATURE_ON", "TOGGLE_FEATURE_OFF", "MARK_FEATURE_STALE"}
    toggle = {p["name"]: p for p in catalogue["TOGGLE_FEATURE_ON"]["parameters"]}
    assert sorted(toggle["featureName"]["options"]) == ["banner", "kill-checkout"]
    assert toggle["environment"]["options"] == ["development", "production"]
    stale = [p["name"] for p in catalogue["MARK_FEATURE_STALE"]["parameters"]]
    assert stale == ["project", "featureName"]
    await api.json("GET", "/api/admin/projects/nope/actions/config", 404)


async def test_the_openapi_document_describes_the_action_set_body(api: Api) -> None:
    document = await api.json("GET", "/docs/openapi.json", token=None)
    create = document["paths"][ACTIONS.replace("default", "{project}")]["post"]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/createActionsSchema"}
    assert "201" in create["responses"]
    body = document["components"]["schemas"]["createActionsSchema"]
    assert body["required"] == ["name", "match", "actions"]
