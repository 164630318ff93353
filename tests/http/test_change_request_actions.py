"""Each change-request action applied over a real server and SQLite file (issue 30), in
Unleash's API shape: reorderStrategy, archiveFeature, deleteDependency, updateSegment and
deleteSegment, refused as direct changes, drafted by one person, approved by another and
applied; then the flags and segments are as the changes said, and the event log names
the person who applied them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.model import Constraint, Dependency, Strategy
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.http.test_change_requests import person_headers, send

PROJECT = "/api/admin/projects/alpha"
DRAFTS = PROJECT + "/environments/production/change-requests"
FLAGS = PROJECT + "/features"
SEGMENTS = "/api/admin/segments"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Service, TestClient[Any, Any]]]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.projects.create_project("alpha", "Alpha")
    for name in ("ordered", "child", "parent", "old", "gated"):
        service.flags.create_flag("alpha", name)
    app = create_app(service, ServerConfig())
    try:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield service, client
    finally:
        store.close()


def _production(flag: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in flag["environments"] if e["name"] == "production")


async def test_each_action_is_applied_through_a_change_request_with_its_events(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    # Before change requests are on: two strategies of "ordered" (the first using the
    # segment "beta"), "child" depending on "parent", and "gated" using the segment
    # "leaving" in production.
    beta = service.segments.create_segment("beta", [Constraint("userId", "IN", ("1", "2"))])
    leaving = service.segments.create_segment("leaving", [Constraint("userId", "IN", ("9",))])
    strategies = service.strategies
    first = strategies.add_strategy(
        "alpha", "ordered", "production", Strategy("default", title="first", segments=(beta.id,))
    )
    second = strategies.add_strategy(
        "alpha", "ordered", "production", Strategy("default", title="second")
    )
    gate = strategies.add_strategy(
        "alpha", "gated", "production", Strategy("default", segments=(leaving.id,))
    )
    service.dependencies.set_dependencies("alpha", "child", [Dependency("parent")])
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    config = {"changeRequestsEnabled": True, "requiredApprovals": 1}
    assert (await send(client, "PUT", DRAFTS + "/config", ann, config))[0] == 204

    # Directly, each is refused with the route to use (a 403, as Unleash's enterprise).
    beta_body = {"name": "beta", "constraints": []}
    for method, path, body in [
        ("POST", FLAGS + "/ordered/environments/production/strategies/set-sort-order", []),
        ("DELETE", FLAGS + "/old", None),
        ("PUT", FLAGS + "/child/dependencies", []),
        ("PUT", f"{SEGMENTS}/{beta.id}", beta_body),
        ("DELETE", f"{SEGMENTS}/{leaving.id}", None),
    ]:
        status, refused = await send(client, method, path, ann, body)
        assert status == 403, (path, refused)
        assert DRAFTS in refused["message"]

    new_order = [{"id": second.id, "sortOrder": 0}, {"id": first.id, "sortOrder": 1}]
    wider = [{"contextName": "userId", "operator": "IN", "values": ["1", "2", "3"]}]
    status, draft = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [
            {"feature": "ordered", "action": "reorderStrategy", "payload": new_order},
            {"feature": "old", "action": "archiveFeature"},
            {"feature": "child", "action": "deleteDependency"},
            {
                "feature": None,
                "action": "updateSegment",
                "payload": {"id": beta.id, "name": "beta", "constraints": wider},
            },
            {"feature": "gated", "action": "deleteStrategy", "payload": {"id": gate.id}},
        ],
    )
    assert status == 200, draft
    # Alone, the segment still in use could not be deleted; after the draft's removal
    # of its one use it can (tried after the draft's changes, as applying runs them).
    deletion = {"feature": None, "action": "deleteSegment", "payload": {"id": leaving.id}}
    status, draft = await send(client, "POST", DRAFTS, ann, deletion)
    assert status == 200, draft
    assert [(s["action"], s["name"]) for s in draft["segments"]] == [
        ("updateSegment", "beta"),
        ("deleteSegment", "leaving"),
    ]
    assert draft["segments"][1]["payload"] == {"id": leaving.id, "name": "leaving"}
    assert {f["name"]: [c["action"] for c in f["changes"]] for f in draft["features"]} == {
        "ordered": ["reorderStrategy"],
        "old": ["archiveFeature"],
        "child": ["deleteDependency"],
        "gated": ["deleteStrategy"],
    }
    # Nothing has changed yet.
    ordered = (await send(client, "GET", FLAGS + "/ordered", bob))[1]
    assert [s["id"] for s in _production(ordered)["strategies"]] == [first.id, second.id]
    assert (await send(client, "GET", f"{SEGMENTS}/{leaving.id}", bob))[0] == 200

    one = f"{PROJECT}/change-requests/{draft['id']}"
    assert (await send(client, "PUT", one + "/state", ann, {"state": "In review"}))[0] == 200
    assert (await send(client, "PUT", one + "/state", bob, {"state": "Approved"}))[0] == 200
    status, applied = await send(client, "PUT", one + "/state", ann, {"state": "Applied"})
    assert status == 200, applied
    assert applied["state"] == "Applied"

    ordered = (await send(client, "GET", FLAGS + "/ordered", bob))[1]
    assert [s["id"] for s in _production(ordered)["strategies"]] == [second.id, first.id]
    archived = (await send(client, "GET", "/api/admin/archive/features/alpha", bob))[1]
    assert [f["name"] for f in archived["features"]] == ["old"]
    assert (await send(client, "GET", FLAGS + "/child", bob))[1]["dependencies"] == []
    status, segment = await send(client, "GET", f"{SEGMENTS}/{beta.id}", bob)
    assert segment["constraints"][0]["values"] == ["1", "2", "3"]
    assert (await send(client, "GET", f"{SEGMENTS}/{leaving.id}", bob))[0] == 404
    gated = (await send(client, "GET", FLAGS + "/gated", bob))[1]
    assert _production(gated)["strategies"] == []

    events = service.events.list_events(limit=30)
    applier = {
        "strategy-order-changed": "ordered",
        "feature-archived": "old",
        "feature-dependencies-updated": "child",
        "segment-updated": None,
        "feature-strategy-remove": "gated",
        "segment-deleted": None,
        "change-request-applied": None,
    }
    by_type = {e.type: e for e in reversed(events)}  # the newest of each type
    for kind, flag in applier.items():
        assert by_type[kind].created_by.endswith(":Ann"), kind
        assert by_type[kind].feature_name == flag, kind
    assert by_type["segment-deleted"].pre_data is not None
    assert by_type["segment-deleted"].pre_data["name"] == "leaving"
    assert by_type["feature-dependencies-updated"].data == {"dependencies": []}
    # In the order drafted: the strategy goes before the segment it used.
    approved_at = next(e.id for e in events if e.type == "change-request-approved")
    order = [e.type for e in reversed(events) if e.type in applier and e.id > approved_at]
    assert order == list(applier)


async def test_a_segment_deletion_still_in_use_or_misnamed_is_refused_and_nothing_drafted(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    leaving = service.segments.create_segment("leaving", [])
    service.strategies.add_strategy(
        "alpha", "gated", "production", Strategy("default", segments=(leaving.id,))
    )
    ann = person_headers(service, client, "Ann")
    config = {"changeRequestsEnabled": True, "requiredApprovals": 1}
    assert (await send(client, "PUT", DRAFTS + "/config", ann, config))[0] == 204
    deletion = {"feature": None, "action": "deleteSegment", "payload": {"id": leaving.id}}
    status, refused = await send(client, "POST", DRAFTS, ann, deletion)
    assert status == 409, refused
    assert "remove it from them first" in refused["message"]
    misnamed = {**deletion, "payload": {"id": leaving.id, "name": "other"}}
    status, refused = await send(client, "POST", DRAFTS, ann, misnamed)
    assert status == 400, refused
    assert refused["details"][0]["path"] == "$.payload.name"
    assert (await send(client, "GET", PROJECT + "/change-requests/pending", ann))[1] == []
