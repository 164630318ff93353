"""The preview on a change request over a real server and SQLite file (issue 30): per flag,
what all the request's changes would do to the environment's sampled contexts, counted as
the preview of the same end state counts it, before anyone approves; nothing is written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.model import Constraint, Strategy
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.http.test_change_requests import person_headers, send

PROJECT = "/api/admin/projects/alpha"
DRAFTS = PROJECT + "/environments/production/change-requests"
ROLLOUT = {
    "name": "flexibleRollout",
    "parameters": {"rollout": "30", "stickiness": "userId", "groupId": "f"},
}
VARIANTS = [
    {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "userId"},
    {"name": "green", "weight": 500, "weightType": "variable", "stickiness": "userId"},
]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Service, TestClient[Any, Any]]]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.projects.create_project("alpha", "Alpha")
    for name in ("f", "g"):
        service.flags.create_flag("alpha", name)
    contexts = [{"userId": f"u{i}", "properties": {"plan": "pro"}} for i in range(400)]
    service.previews.replace_context_sample("production", contexts)
    app = create_app(service, ServerConfig(preview_sampling=False))
    try:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield service, client
    finally:
        store.close()


async def _draft(client: TestClient[Any, Any], ann: dict[str, str], changes: Any) -> str:
    config = {"changeRequestsEnabled": True, "requiredApprovals": 1}
    assert (await send(client, "PUT", DRAFTS + "/config", ann, config))[0] == 204
    status, draft = await send(client, "POST", DRAFTS, ann, changes)
    assert status == 200, draft
    return f"{PROJECT}/change-requests/{draft['id']}"


async def test_a_request_previews_as_the_preview_of_its_end_state_and_writes_nothing(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    one = await _draft(
        client,
        ann,
        [
            {"feature": "f", "action": "addStrategy", "payload": ROLLOUT},
            {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
            {"feature": "f", "action": "patchVariant", "payload": {"variants": VARIANTS}},
        ],
    )
    events_before = len(service.events.list_events())
    status, previewed = await send(client, "GET", one + "/preview", ann)
    assert status == 200, previewed
    assert (previewed["environment"], previewed["state"]) == ("production", "Draft")
    [feature] = previewed["features"]
    assert (feature["flag"], feature["notes"]) == ("f", [])
    end_state = {"enabled": True, "strategies": [ROLLOUT], "variants": VARIANTS}
    status, direct = await send(
        client, "POST", PROJECT + "/features/f/environments/production/preview", ann, end_state
    )
    assert status == 200, direct
    assert feature["preview"] == direct
    preview = feature["preview"]
    assert preview["contexts"] == 400
    assert 0 < preview["offToOn"]["count"] < 400
    assert preview["onToOff"]["count"] == 0
    assert preview["offToOn"]["count"] + preview["stayedOff"] == 400
    assert {m["to"] for m in preview["variantMoves"]} == {"blue", "green"}
    # Nothing was written: f is still off with no strategy, and no event was recorded.
    assert service.strategies.list_strategies("alpha", "f", "production") == []
    details = service.flags.get_flag("alpha", "f")
    assert not any(e.enabled for e in details.environments if e.environment.name == "production")
    assert len(service.events.list_events()) == events_before
    # The approver sees the same preview while the request is in review.
    assert (await send(client, "PUT", one + "/state", ann, {"state": "In review"}))[0] == 200
    status, reviewed = await send(client, "GET", one + "/preview", bob)
    assert status == 200
    assert reviewed["features"][0]["preview"] == direct


async def test_an_archive_or_a_segment_change_is_stated_instead_of_counted(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    segment = service.segments.create_segment("pros", [Constraint("plan", "IN", ("pro",))])
    one = await _draft(
        client,
        ann,
        [
            {"feature": "g", "action": "archiveFeature", "payload": None},
            {
                "feature": None,
                "action": "updateSegment",
                "payload": {
                    "id": segment.id,
                    "name": "pros",
                    "constraints": [{"contextName": "plan", "operator": "IN", "values": ["team"]}],
                },
            },
        ],
    )
    status, previewed = await send(client, "GET", one + "/preview", ann)
    assert status == 200, previewed
    [feature] = previewed["features"]
    assert feature["flag"] == "g"
    assert feature["preview"] is None
    assert any("archiveFeature" in note and "not counted" in note for note in feature["notes"])
    [segment_change] = previewed["segmentChanges"]
    assert f"segment {segment.id}" in segment_change
    assert "not counted" in segment_change
    assert service.flags.get_flag("alpha", "g").flag.archived_at is None


async def test_a_closed_request_has_no_preview_and_an_unknown_one_is_not_found(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    one = await _draft(
        client, ann, {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}}
    )
    assert (await send(client, "PUT", one + "/state", ann, {"state": "Cancelled"}))[0] == 200
    status, error = await send(client, "GET", one + "/preview", ann)
    assert status == 409
    assert "Cancelled" in error["message"]
    status, _ = await send(client, "GET", PROJECT + "/change-requests/999/preview", ann)
    assert status == 404


async def test_a_flag_whose_changes_no_longer_apply_says_why_and_the_others_are_counted(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    placed = service.strategies.add_strategy("alpha", "g", "production", Strategy("default"))
    widened = {**ROLLOUT, "id": placed.id, "parameters": {**ROLLOUT["parameters"], "groupId": "g"}}
    one = await _draft(
        client,
        ann,
        [
            {"feature": "g", "action": "updateStrategy", "payload": widened},
            {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
        ],
    )
    # An admin (who may skip change requests) deletes g's strategy directly meanwhile.
    service.strategies.delete_strategy("alpha", "g", "production", placed.id or "")
    status, previewed = await send(client, "GET", one + "/preview", ann)
    assert status == 200, previewed
    by_flag = {feature["flag"]: feature for feature in previewed["features"]}
    assert by_flag["g"]["preview"] is None
    [note] = by_flag["g"]["notes"]
    assert note.startswith("the changes cannot be applied as they stand: "), note
    assert f'no strategy "{placed.id}"' in note
    assert by_flag["f"]["preview"]["contexts"] == 400
    assert by_flag["f"]["notes"] == []
