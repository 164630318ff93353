"""Change requests over a real server and SQLite file (issue 30), with two people: an
author who cannot approve their own request, and an approver."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.model import Dependency, Strategy
from flagcore.people import RootRole
from flagcore.service import DraftChange, NewUser, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.session_cookie import COOKIE_NAME, SIGNER
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.postgres_server import fresh_database

PROJECT = "/api/admin/projects/alpha"
DRAFTS = PROJECT + "/environments/production/change-requests"
FLAG = PROJECT + "/features/f"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Service, TestClient[Any, Any]]]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.projects.create_project("alpha", "Alpha")
    for name in ("f", "g", "parent", "grandparent"):
        service.flags.create_flag("alpha", name)
    app = create_app(service, ServerConfig())
    try:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield service, client
    finally:
        store.close()


def person_headers(service: Service, client: TestClient[Any, Any], name: str) -> dict[str, str]:
    """Headers of a signed-in Editor named ``name`` (a session cookie of their own)."""
    user = service.users.create_user(NewUser(RootRole.EDITOR, email=f"{name}@x.io", name=name))
    started = service.sessions.start(user_id=user.id, lifetime=dt.timedelta(1))
    signer = client.app[SIGNER]  # type: ignore[index]
    cookie = signer.cookie_value(signer.new_session(started.secret))
    return {"Cookie": f"{COOKIE_NAME}={cookie}", "Content-Type": "application/json"}


async def send(
    client: TestClient[Any, Any], method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    response = await client.request(method, path, data=data, headers=headers)
    text = await response.text()
    return response.status, (json.loads(text) if text else None)


async def _turn_on(client: TestClient[Any, Any], headers: dict[str, str]) -> None:
    status, _ = await send(
        client,
        "PUT",
        DRAFTS + "/config",
        headers,
        {"changeRequestsEnabled": True, "requiredApprovals": 1},
    )
    assert status == 204


async def _approved(
    client: TestClient[Any, Any], ann: dict[str, str], bob: dict[str, str], changes: Any
) -> int:
    status, draft = await send(client, "POST", DRAFTS, ann, changes)
    assert status == 200, draft
    one = f"{PROJECT}/change-requests/{draft['id']}"
    assert (await send(client, "PUT", one + "/state", ann, {"state": "In review"}))[0] == 200
    status, approved = await send(client, "PUT", one + "/state", bob, {"state": "Approved"})
    assert approved["state"] == "Approved"
    return int(draft["id"])


def _on_in_production(service: Service, flag: str) -> bool:
    details = service.flags.get_flag("alpha", flag)
    return any(e.enabled for e in details.environments if e.environment.name == "production")


async def test_the_life_cycle_author_cannot_approve_approver_approves_then_it_is_applied(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    status, config = await send(client, "GET", PROJECT + "/change-requests/config", ann)
    assert {"environment": "production", "type": "production", "changeRequestEnabled": True,
            "requiredApprovals": 1} in config  # fmt: skip
    status, draft = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [
            {"feature": "f", "action": "addStrategy", "payload": {"name": "default"}},
            {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
        ],
    )
    assert status == 200
    assert draft["state"] == "Draft"
    assert draft["createdBy"]["username"] == "Ann"
    assert [c["action"] for c in draft["features"][0]["changes"]] == [
        "addStrategy",
        "updateEnabled",
    ]
    one = f"{PROJECT}/change-requests/{draft['id']}"
    await send(client, "PUT", one + "/title", ann, {"title": "Launch f"})
    status, _ = await send(client, "PUT", one + "/state", ann, {"state": "In review"})
    assert status == 200
    status, refused = await send(client, "PUT", one + "/state", ann, {"state": "Approved"})
    assert status == 403
    assert "own" in refused["message"]
    waiting = await send(client, "GET", PROJECT + "/change-requests/actionable", bob)
    assert waiting[1] == {"total": 1}  # Bob may approve Ann's request
    assert (await send(client, "GET", PROJECT + "/change-requests/actionable", ann))[1] == {
        "total": 0
    }
    status, _early = await send(client, "PUT", one + "/state", bob, {"state": "Applied"})
    assert status == 409
    assert not _on_in_production(service, "f")
    status, approved = await send(
        client, "PUT", one + "/state", bob, {"state": "Approved", "comment": "fine"}
    )
    assert approved["state"] == "Approved"
    assert approved["approvals"][0]["createdBy"]["username"] == "Bob"
    assert approved["comments"][0]["text"] == "fine"
    status, applied = await send(client, "PUT", one + "/state", ann, {"state": "Applied"})
    assert status == 200
    assert applied["state"] == "Applied"
    assert applied["title"] == "Launch f"
    status, counts = await send(client, "GET", PROJECT + "/change-requests/count", bob)
    assert counts == {
        "applied": 1,
        "approved": 0,
        "rejected": 0,
        "reviewRequired": 0,
        "scheduled": 0,
        "total": 1,
    }
    assert _on_in_production(service, "f")
    status, listed = await send(client, "GET", PROJECT + "/change-requests", bob)
    assert [r["id"] for r in listed] == [draft["id"]]
    events = {e.type: e.created_by for e in service.events.list_events(limit=40)}
    assert events["change-request-approved"].endswith(":Bob")
    assert events["change-request-applied"].endswith(":Ann")


async def test_a_bad_payload_is_a_400_at_its_path_and_nothing_is_stored(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    await _turn_on(client, ann)
    status, error = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [
            {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
            {"feature": "f", "action": "patchVariant", "payload": {"variants": [{"name": 3}]}},
        ],
    )
    assert status == 400
    assert error["details"][0]["path"].startswith("$[1].payload.variants[0]")
    status, unknown = await send(
        client, "POST", DRAFTS, ann, {"feature": "f", "action": "fly", "payload": {}}
    )
    assert status == 400
    assert unknown["details"][0]["path"] == "$.action"
    assert (await send(client, "GET", PROJECT + "/change-requests/pending", ann))[1] == []


async def test_a_conflict_is_shown_and_refuses_apply_until_the_change_is_redone(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    request_id = await _approved(
        client, ann, bob, {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}}
    )
    # An admin token (SKIP_CHANGE_REQUEST, as Unleash's admins) changes f directly.
    service.strategies.add_strategy("alpha", "f", "production", Strategy("default"))
    one = f"{PROJECT}/change-requests/{request_id}"
    status, shown = await send(client, "GET", one, bob)
    change = shown["features"][0]["changes"][0]
    assert "feature-strategy-add by system" in change["conflict"]
    assert shown["features"][0]["conflict"] == change["conflict"]
    status, _refused = await send(client, "PUT", one + "/state", bob, {"state": "Applied"})
    assert status == 409
    assert not _on_in_production(service, "f")
    status, _ = await send(
        client,
        "PUT",
        one + f"/changes/{change['id']}",
        ann,
        {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
    )
    assert status == 200
    status, redone = await send(client, "GET", one, bob)
    assert "conflict" not in redone["features"][0]["changes"][0]
    assert redone["state"] == "In review"  # the approval was for the old change


async def test_apply_is_all_or_nothing_when_the_second_change_fails(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    request_id = await _approved(
        client,
        ann,
        bob,
        [
            {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
            {"feature": "g", "action": "addDependency", "payload": {"feature": "parent"}},
        ],
    )
    service.dependencies.set_dependencies("alpha", "parent", [Dependency("grandparent")])
    one = f"{PROJECT}/change-requests/{request_id}"
    status, error = await send(client, "PUT", one + "/state", bob, {"state": "Applied"})
    assert status == 400, error
    assert not _on_in_production(service, "f")
    assert service.flags.get_flag("alpha", "g").flag.dependencies == ()
    assert (await send(client, "GET", one, bob))[1]["state"] == "Approved"


async def test_direct_changes_are_refused_with_the_route_to_use(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    await _turn_on(client, ann)
    status, error = await send(client, "POST", FLAG + "/environments/production/on", ann)
    assert status == 403
    assert "/api/admin/projects/alpha/environments/production/change-requests" in (error["message"])
    status, _ = await send(
        client, "POST", FLAG + "/environments/production/strategies", ann, {"name": "default"}
    )
    assert status == 403
    status, _ = await send(client, "PUT", FLAG + "/environments/production/variants", ann, [])
    assert status == 403
    assert not _on_in_production(service, "f")
    assert service.strategies.list_strategies("alpha", "f", "production") == []
    imported = {
        "project": "alpha",
        "environment": "production",
        "data": {"features": [{"name": "imported", "project": "x"}]},
    }
    status, _ = await send(client, "POST", "/api/admin/features-batch/import", ann, imported)
    assert status == 403
    assert all(f.name != "imported" for f in service.flags.list_flags())
    status, _ = await send(client, "POST", FLAG + "/environments/development/on", ann)
    assert status == 200


async def _state_becomes(
    client: TestClient[Any, Any], path: str, headers: dict[str, str], state: str
) -> dict[str, Any]:
    """The request once it reached ``state`` (the schedule runner acts in the background)."""
    for _ in range(300):
        _status, shown = await send(client, "GET", path, headers)
        if shown["state"] == state:
            return dict(shown)
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} stayed {shown['state']}")


async def test_a_schedule_is_applied_within_a_second_and_a_failing_one_records_why(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    request_id, failing_id = [
        await _approved(
            client,
            ann,
            bob,
            {"feature": flag, "action": "updateEnabled", "payload": {"enabled": True}},
        )
        for flag in ("f", "g")
    ]
    # g changes after approval (the server's own caller skips change requests): when its
    # time comes, its request conflicts and cannot be applied.
    service.strategies.add_strategy("alpha", "g", "production", Strategy("default"))
    one = f"{PROJECT}/change-requests/{request_id}"
    failing = f"{PROJECT}/change-requests/{failing_id}"
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    for path in (one, failing):
        status, scheduled = await send(
            client, "PUT", path + "/state", bob, {"state": "Scheduled", "scheduledAt": at}
        )
        assert status == 200, scheduled
        assert scheduled["schedule"]["status"] == "pending"
    await _state_becomes(client, one, bob, "Applied")
    assert _on_in_production(service, "f")
    events = service.events.list_events(limit=60)
    [success] = [e for e in events if e.type == "change-request-scheduled-application-success"]
    assert success.created_by.endswith(":Bob")
    assert success.data is not None
    # Looked for every 0.5 s (the default): applied within a second of its time.
    assert 0 <= success.data["data"]["delaySeconds"] < 1.5

    for _ in range(100):
        shown = (await send(client, "GET", failing, bob))[1]
        if shown["schedule"]["status"] == "failed":
            break
        await asyncio.sleep(0.1)
    assert shown["state"] == "Scheduled"
    assert shown["schedule"]["status"] == "failed"
    reason = shown["schedule"]["reason"]
    assert 'flag "g" changed since this change was drafted' in reason
    events = service.events.list_events(limit=60)
    [failure] = [e for e in events if e.type == "change-request-scheduled-application-failure"]
    assert failure.created_by.endswith(":Bob")
    assert failure.data is not None
    assert failure.data["changeRequestId"] == failing_id
    assert failure.data["data"]["reason"] == reason
    assert not _on_in_production(service, "g")  # nothing of it was written


async def test_a_schedule_missed_while_the_server_was_down_is_applied_at_its_start(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        service.projects.create_project("alpha", "Alpha")
        service.flags.create_flag("alpha", "f")
        service.change_requests.set_change_request_config(
            "alpha", "production", enabled=True, required_approvals=1
        )
        ann, bob = (
            service.roles.principal_of(
                service.users.create_user(NewUser(RootRole.EDITOR, email=f"{n}@x.io", name=n))
            )
            for n in ("Ann", "Bob")
        )
        crs = service.change_requests
        change = DraftChange("f", "updateEnabled", {"enabled": True})
        draft = crs.add_changes("alpha", "production", [change], actor=ann)
        crs.submit_change_request("alpha", draft.id, actor=ann)
        crs.approve_change_request("alpha", draft.id, actor=bob)
        at = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        crs.schedule_change_request("alpha", draft.id, at, actor=bob)
    finally:
        store.close()
    # The server was down at that time: it starts two hours later.
    reopened = SqliteStore(tmp_path / "flags.db")
    try:
        later = Service(reopened, clock=lambda: at + dt.timedelta(hours=1))
        app = create_app(later, ServerConfig())
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            secret = later.tokens.create_token("ops", "admin").secret
            headers = {"Authorization": secret}
            one = f"{PROJECT}/change-requests/{draft.id}"
            await _state_becomes(client, one, headers, "Applied")
        events = later.events.list_events(limit=30)
        [success] = [e for e in events if e.type == "change-request-scheduled-application-success"]
        assert success.data is not None
        assert success.data["data"]["delaySeconds"] == 3600
        assert _on_in_production(later, "f")
    finally:
        reopened.close()


async def test_pending_schedules_are_listed_per_project_and_per_flag(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    request_id = await _approved(
        client, ann, bob, {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}}
    )
    one = f"{PROJECT}/change-requests/{request_id}"
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
    status, scheduled = await send(
        client, "PUT", one + "/state", bob, {"state": "Scheduled", "scheduledAt": at}
    )
    assert status == 200
    expected = [{"id": request_id, "environment": "production", "title": scheduled["title"]}]
    scheduled_path = PROJECT + "/change-requests/scheduled"
    assert (await send(client, "GET", scheduled_path, bob))[1] == expected
    assert (await send(client, "GET", scheduled_path + "?feature=f", bob))[1] == expected
    assert (await send(client, "GET", scheduled_path + "?feature=g", bob))[1] == []
    status, past = await send(
        client, "PUT", one + "/state", bob, {"state": "Scheduled", "scheduledAt": "2001-01-01"}
    )
    assert status == 400
    assert past["details"][0]["path"] == "$.scheduledAt"


async def test_two_nodes_over_postgresql_apply_a_schedule_exactly_once() -> None:
    url = fresh_database()
    stores = [PostgresStore(url), PostgresStore(url)]
    try:
        first = Service(stores[0])
        first.projects.create_project("alpha", "Alpha")
        first.flags.create_flag("alpha", "f")
        first.change_requests.set_change_request_config(
            "alpha", "production", enabled=True, required_approvals=1
        )
        ann, bob = (
            first.roles.principal_of(
                first.users.create_user(NewUser(RootRole.EDITOR, email=f"{n}@x.io", name=n))
            )
            for n in ("Ann", "Bob")
        )
        crs = first.change_requests
        change = DraftChange("f", "updateEnabled", {"enabled": True})
        draft = crs.add_changes("alpha", "production", [change], actor=ann)
        crs.submit_change_request("alpha", draft.id, actor=ann)
        crs.approve_change_request("alpha", draft.id, actor=bob)
        services = [first, Service(stores[1])]
        secret = first.tokens.create_token("ops", "admin").secret
        headers = {"Authorization": secret}
        one = f"{PROJECT}/change-requests/{draft.id}"
        async with (
            TestClient(TestServer(create_app(services[0], ServerConfig()), host="127.0.0.1")) as a,
            TestClient(TestServer(create_app(services[1], ServerConfig()), host="127.0.0.1")) as b,
        ):
            at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
            crs.schedule_change_request("alpha", draft.id, at, actor=bob)
            await _state_becomes(a, one, headers, "Applied")
            await _state_becomes(b, one, headers, "Applied")
            await asyncio.sleep(1.2)  # both runners look again: neither applies it twice
        events = services[1].events.list_events(limit=100)
        types = [e.type for e in events]
        assert types.count("change-request-scheduled-application-success") == 1
        assert types.count("change-request-applied") == 1
        assert types.count("feature-environment-enabled") == 1
        assert types.count("change-request-scheduled-application-failure") == 0
    finally:
        for store in stores:
            store.close()


def _user_id(service: Service, name: str) -> int:
    return next(u.id for u in service.users.list_users() if u.name == name)


async def test_an_approver_rejects_with_a_comment_and_the_author_cancels_each_an_event(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    await _turn_on(client, ann)
    requests = []
    for flag in ("f", "g"):
        change = {"feature": flag, "action": "updateEnabled", "payload": {"enabled": True}}
        status, draft = await send(client, "POST", DRAFTS, ann, change)
        one = f"{PROJECT}/change-requests/{draft['id']}"
        assert (await send(client, "PUT", one + "/state", ann, {"state": "In review"}))[0] == 200
        requests.append((int(draft["id"]), one))
    (rejected_id, rejected), (cancelled_id, cancelled) = requests

    status, commented = await send(client, "POST", rejected + "/comments", bob, {"text": "Why?"})
    assert status == 201
    assert [c["text"] for c in commented["comments"]] == ["Why?"]
    status, refused = await send(client, "PUT", rejected + "/state", ann, {"state": "Rejected"})
    assert status == 403  # the author cancels instead
    assert "own" in refused["message"]
    rejection = {"state": "Rejected", "comment": "Not before the freeze ends"}
    status, shown = await send(client, "PUT", rejected + "/state", bob, rejection)
    assert status == 200, shown
    assert shown["state"] == "Rejected"
    assert [r["createdBy"]["username"] for r in shown["rejections"]] == ["Bob"]
    assert [(c["createdBy"]["username"], c["text"]) for c in shown["comments"]] == [
        ("Bob", "Why?"),
        ("Bob", "Not before the freeze ends"),
    ]
    for state, who in (("Approved", bob), ("Applied", ann), ("Cancelled", ann)):
        status, closed = await send(client, "PUT", rejected + "/state", who, {"state": state})
        assert status == 409, (state, closed)  # closed: nothing leaves Rejected

    status, refused = await send(client, "PUT", cancelled + "/state", bob, {"state": "Cancelled"})
    assert status == 403  # only the author cancels
    status, shown = await send(client, "PUT", cancelled + "/state", ann, {"state": "Cancelled"})
    assert status == 200, shown
    assert shown["state"] == "Cancelled"
    status, closed = await send(client, "PUT", cancelled + "/state", bob, {"state": "Approved"})
    assert status == 409

    assert not _on_in_production(service, "f")
    assert not _on_in_production(service, "g")
    assert (await send(client, "GET", PROJECT + "/change-requests/pending", ann))[1] == []
    counts = (await send(client, "GET", PROJECT + "/change-requests/count", ann))[1]
    assert (counts["rejected"], counts["total"]) == (1, 2)
    events = service.events.list_events(limit=60)
    said = {
        (e.type, e.data["changeRequestId"]): (e.created_by, e.data)
        for e in events
        if e.data is not None and "changeRequestId" in e.data
    }
    who, data = said[("change-request-comment-added", rejected_id)]
    assert who.endswith(":Bob")
    assert data["data"] == {"text": "Why?"}
    who, data = said[("change-request-rejected", rejected_id)]
    assert who.endswith(":Bob")
    assert data["state"] == "Rejected"
    assert data["data"] == {"comment": "Not before the freeze ends"}
    who, data = said[("change-request-cancelled", cancelled_id)]
    assert who.endswith(":Ann")
    assert data["state"] == "Cancelled"
    assert all(e.project == "alpha" and e.environment == "production" for e in events[:3])


async def test_an_approval_stops_counting_once_its_approver_is_demoted_or_disabled(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob, cy = (person_headers(service, client, name) for name in ("Ann", "Bob", "Cy"))
    secret = service.tokens.create_token("ops", "admin").secret
    admin = {"Authorization": secret, "Content-Type": "application/json"}
    await _turn_on(client, ann)
    request_id = await _approved(
        client, ann, bob, {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}}
    )
    one = f"{PROJECT}/change-requests/{request_id}"
    users = "/api/admin/user-admin/"

    async def state_and_apply() -> tuple[str, int, Any]:
        shown = (await send(client, "GET", one, ann))[1]
        status, answer = await send(client, "PUT", one + "/state", ann, {"state": "Applied"})
        return shown["state"], status, answer

    # Bob is made a Viewer: he may no longer approve, so his approval no longer counts.
    demoted = await send(
        client, "PUT", users + str(_user_id(service, "Bob")), admin, {"rootRole": 3}
    )
    assert demoted[0] == 200, demoted
    state, status, refused = await state_and_apply()
    assert (state, status) == ("In review", 409)
    assert "has 0 of the 1 approvals" in refused["message"]
    assert not _on_in_production(service, "f")

    # Cy approves: Approved again; then Cy is disabled, and it is In review again.
    status, approved = await send(client, "PUT", one + "/state", cy, {"state": "Approved"})
    assert approved["state"] == "Approved"
    disabled = await send(
        client, "PUT", users + str(_user_id(service, "Cy")), admin, {"disabled": True}
    )
    assert disabled[0] == 200, disabled
    state, status, refused = await state_and_apply()
    assert (state, status) == ("In review", 409)
    assert not _on_in_production(service, "f")
    actionable = await send(client, "GET", PROJECT + "/change-requests/actionable", ann)
    assert actionable[1] == {"total": 0}  # neither approvable by its author nor appliable

    # Bob is an Editor again: his approval counts again and the request is applied.
    promoted = await send(
        client, "PUT", users + str(_user_id(service, "Bob")), admin, {"rootRole": 2}
    )
    assert promoted[0] == 200
    state, status, applied = await state_and_apply()
    assert (state, status) == ("Approved", 200)
    assert applied["state"] == "Applied"
    assert _on_in_production(service, "f")
    events = [e for e in service.events.list_events(limit=60) if e.type.startswith("change-")]
    assert [(e.type, e.created_by.rsplit(":", 1)[-1]) for e in events[:3]] == [
        ("change-request-applied", "Ann"),
        ("change-request-approved", "Cy"),
        ("change-request-approved", "Bob"),
    ]


async def test_pending_requests_and_available_reviewers_answer_over_http(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    service.users.create_user(NewUser(RootRole.VIEWER, email="vi@x.io", name="Vi"))
    gone = service.users.create_user(NewUser(RootRole.EDITOR, email="dan@x.io", name="Dan"))
    service.users.update_user(gone.id, disabled=True)
    await _turn_on(client, ann)

    def on(flag: str) -> dict[str, Any]:
        return {"feature": flag, "action": "updateEnabled", "payload": {"enabled": True}}

    status, ann_draft = await send(client, "POST", DRAFTS, ann, on("f"))
    status, bob_review = await send(client, "POST", DRAFTS, bob, [on("g"), on("parent")])
    bob_one = f"{PROJECT}/change-requests/{bob_review['id']}"
    assert (await send(client, "PUT", bob_one + "/state", bob, {"state": "In review"}))[0] == 200
    status, bob_cancelled = await send(client, "POST", DRAFTS, bob, on("f"))
    cancelled = f"{PROJECT}/change-requests/{bob_cancelled['id']}"
    assert (await send(client, "PUT", cancelled + "/state", bob, {"state": "Cancelled"}))[0] == 200

    async def pending(headers: dict[str, str], flag: str = "") -> list[tuple[int, str]]:
        path = PROJECT + "/change-requests/pending" + (f"/{flag}" if flag else "")
        status, found = await send(client, "GET", path, headers)
        assert status == 200, found
        return sorted((r["id"], r["state"]) for r in found)

    ann_id, bob_id = ann_draft["id"], bob_review["id"]
    # The open ones: one's own drafts among them, not other people's, never closed ones.
    assert await pending(ann) == [(ann_id, "Draft"), (bob_id, "In review")]
    assert await pending(bob) == [(bob_id, "In review")]
    assert await pending(ann, "f") == [(ann_id, "Draft")]
    assert await pending(ann, "parent") == [(bob_id, "In review")]
    assert await pending(bob, "f") == []
    assert await pending(bob, "child") == []
    status, [shown] = await send(client, "GET", PROJECT + "/change-requests/pending/g", ann)
    assert [f["name"] for f in shown["features"]] == ["g", "parent"]
    assert shown["createdBy"]["username"] == "Bob"

    path = PROJECT + "/change-requests/available-reviewers/"
    status, reviewers = await send(client, "GET", path + "production", ann)
    assert status == 200
    # Editors may approve; a Viewer may not, and a disabled person is nobody's reviewer.
    assert sorted((r["name"], r["email"]) for r in reviewers["reviewers"]) == [
        ("Ann", "Ann@x.io"),
        ("Bob", "Bob@x.io"),
    ]
    assert all(isinstance(r["id"], int) for r in reviewers["reviewers"])
    status, unknown = await send(client, "GET", path + "nowhere", ann)
    assert status == 404
    assert "nowhere" in unknown["message"]


async def test_a_direct_archive_is_refused_where_change_requests_are_on(
    server: tuple[Service, TestClient[Any, Any]],
) -> None:
    service, client = server
    service.environments.set_environment_enabled("alpha", "f", "production", True)
    ann = person_headers(service, client, "Ann")
    await _turn_on(client, ann)
    status, refused = await send(client, "DELETE", FLAG, ann)
    assert status == 403, refused
    assert f"POST {DRAFTS})" in refused["message"]
    assert all(f.name != "f" for f in service.archive.list_archived_flags("alpha"))
    events = service.events.list_events(limit=5)
    assert all(e.type != "feature-archived" for e in events)
    # Through a request it goes: the archive is drafted, nothing archived yet.
    status, draft = await send(
        client, "POST", DRAFTS, ann, {"feature": "f", "action": "archiveFeature"}
    )
    assert status == 200, draft
    assert draft["features"][0]["changes"][0]["action"] == "archiveFeature"
    assert all(f.name != "f" for f in service.archive.list_archived_flags("alpha"))
