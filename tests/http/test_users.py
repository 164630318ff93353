"""Users and password sign-in over HTTP, in Unleash's shapes (issue 28): a real server on
127.0.0.1 over a real SQLite file."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app, signed_in
from tests.http.conftest import Api

PASSWORD = "Correct-Horse-9"


async def _create(api: Api, **body: Any) -> Any:
    return await api.json("POST", "/api/admin/user-admin", status=201, json=body)


async def _login(api: Api, username: str, password: str, status: int = 200) -> Any:
    return await api.json(
        "POST",
        "/auth/simple/login",
        status=status,
        token=None,
        json={"username": username, "password": password},
    )


async def test_users_are_created_listed_changed_and_deleted_in_unleashs_shape(api: Api) -> None:
    created = await _create(
        api, email="ann@example.io", name="Ann", rootRole="Editor", password=PASSWORD
    )
    assert created["rootRole"] == 2
    assert "inviteLink" not in created
    assert "password" not in str(created).lower()
    listed = await api.json("GET", "/api/admin/user-admin")
    assert [u["email"] for u in listed["users"]] == ["ann@example.io"]
    assert [(r["id"], r["name"]) for r in listed["rootRoles"]] == [
        (1, "Admin"),
        (2, "Editor"),
        (3, "Viewer"),
    ]
    user_id = created["id"]
    changed = await api.json(
        "PUT", f"/api/admin/user-admin/{user_id}", json={"name": "Ann B", "rootRole": 3}
    )
    assert (changed["name"], changed["rootRole"], changed["email"]) == (
        "Ann B",
        3,
        "ann@example.io",
    )
    assert (await api.json("GET", f"/api/admin/user-admin/{user_id}"))["name"] == "Ann B"
    await api.json("DELETE", f"/api/admin/user-admin/{user_id}")
    await api.json("GET", f"/api/admin/user-admin/{user_id}", status=404)


async def test_a_weak_password_is_a_400_naming_the_field_and_nothing_is_created(
    api: Api,
) -> None:
    refused = await api.json(
        "POST",
        "/api/admin/user-admin",
        status=400,
        json={"email": "ann@example.io", "rootRole": 1, "password": "short"},
    )
    assert {d["path"] for d in refused["details"]} == {"$.password"}
    assert (await api.json("GET", "/api/admin/user-admin"))["users"] == []


async def test_bad_user_bodies_are_400s_with_json_paths(api: Api) -> None:
    for body, path in [
        ({"email": "ann@example.io"}, "$.rootRole"),
        ({"email": "ann@example.io", "rootRole": 7}, "$.rootRole"),
        ({"email": "ann@example.io", "rootRole": "Owner"}, "$.rootRole"),
        ({"email": 5, "rootRole": 1}, "$.email"),
        ({"email": "not an email", "rootRole": 1}, "$.email"),
        ({"name": "Nobody", "rootRole": 1}, "$.email"),
    ]:
        refused = await api.json("POST", "/api/admin/user-admin", status=400, json=body)
        assert path in [d["path"] for d in refused["details"]], (body, refused)


async def test_an_email_taken_in_another_case_is_a_409(api: Api) -> None:
    await _create(api, email="Ann@Example.io", rootRole=1)
    taken = await api.json(
        "POST", "/api/admin/user-admin", status=409, json={"email": "ann@example.IO", "rootRole": 2}
    )
    assert taken["details"][0]["path"] == "$.email"


async def test_sign_in_sets_a_session_that_answers_who_is_signed_in_and_logout_ends_it(
    api: Api,
) -> None:
    created = await _create(api, email="ann@example.io", name="Ann", rootRole=1, password=PASSWORD)
    signed_in = await _login(api, "ANN@example.io", PASSWORD)
    assert signed_in["id"] == created["id"]
    me = await api.json("GET", "/api/admin/user", token=None)
    assert me["email"] == "ann@example.io"
    # The session acts on the admin API, and the event log names the person.
    await api.json(
        "POST", "/api/admin/projects", status=201, token=None, json={"id": "p", "name": "P"}
    )
    events = await api.json("GET", "/api/admin/events")
    assert events["events"][0]["createdBy"] == f"user:{created['id']}:Ann"
    cookie = api.client.session.cookie_jar.filter_cookies(api.client.make_url("/"))
    old = cookie["flagcore_session"].value
    await api.json("POST", "/logout", token=None)
    await api.json("GET", "/api/admin/user", status=401, token=None)
    # The old cookie, sent again by hand, is refused: the session ended on the server.
    await api.json(
        "GET", "/api/admin/user", status=401, token=None, cookies={"flagcore_session": old}
    )


async def test_a_wrong_password_and_an_unknown_account_get_the_same_401(api: Api) -> None:
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    wrong = await _login(api, "ann@example.io", "Wrong-Horse-9", status=401)
    nobody = await _login(api, "bob@example.io", PASSWORD, status=401)
    assert wrong["message"] == nobody["message"]
    await _login(api, "ann@example.io", PASSWORD + "x" * 200_000, status=401)
    await api.json("GET", "/api/admin/user", status=401, token=None)


async def test_an_admin_token_asking_who_it_is_gets_itself_as_admin(api: Api) -> None:
    me = await api.json("GET", "/api/admin/user")
    assert (me["id"], me["name"], me["rootRole"], me["accountType"]) == (
        0,
        "admin",
        1,
        "API token",
    )


async def test_deleting_disabling_or_ending_a_users_sessions_signs_them_out_at_once(
    api: Api,
) -> None:
    created = await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    user = f"/api/admin/user-admin/{created['id']}"
    await _login(api, "ann@example.io", PASSWORD)
    await api.json("PUT", user, json={"disabled": True})
    await api.json("GET", "/api/admin/user", status=401, token=None)
    await _login(api, "ann@example.io", PASSWORD, status=401)
    await api.json("PUT", user, json={"disabled": False})
    await _login(api, "ann@example.io", PASSWORD)
    await api.json("DELETE", user + "/sessions")
    await api.json("GET", "/api/admin/user", status=401, token=None)
    await _login(api, "ann@example.io", PASSWORD)
    await api.json("POST", user + "/change-password", json={"password": "Another-Horse-7"})
    await api.json("GET", "/api/admin/user", status=401, token=None)
    await _login(api, "ann@example.io", "Another-Horse-7")
    await api.json("DELETE", user)
    await api.json("GET", "/api/admin/user", status=401, token=None)


async def test_a_reset_link_is_shown_to_the_admin_and_sets_a_password_once(api: Api) -> None:
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    answer = await api.json(
        "POST", "/api/admin/user-admin/reset-password", json={"id": "ann@example.io"}
    )
    url = answer["resetPasswordUrl"]
    token = re.search(r"token=([A-Za-z0-9_-]+)$", url)
    assert token is not None
    assert url.startswith(str(api.client.make_url("/ui/set-password")))
    await api.json(
        "POST", "/api/admin/user-admin/reset-password", status=404, json={"id": "bob@example.io"}
    )


async def test_a_user_without_a_password_gets_an_invitation_link(api: Api) -> None:
    created = await _create(api, email="ann@example.io", rootRole=3)
    assert "/ui/set-password?token=" in created["inviteLink"]
    await _login(api, "ann@example.io", "", status=401)


async def test_only_the_admin_root_role_manages_users(api: Api) -> None:
    await _create(api, email="ed@example.io", rootRole="Editor", password=PASSWORD)
    await _login(api, "ed@example.io", PASSWORD)
    await api.json("GET", "/api/admin/user-admin", status=403, token=None)
    await api.json("GET", "/api/admin/user", token=None)


@pytest.fixture
async def tight_api(service: Service) -> AsyncIterator[Api]:
    config = ServerConfig(sign_in_failures_per_account=3, sign_in_failures_per_address=5)
    async with TestClient(TestServer(create_app(service, config), host="127.0.0.1")) as client:
        yield Api(client)


async def test_failed_sign_ins_are_throttled_per_account_then_per_address(
    tight_api: Api,
) -> None:
    api = tight_api
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    for _ in range(3):
        await _login(api, "ann@example.io", "Wrong-Horse-9", status=401)
    response = await api.request(
        "POST",
        "/auth/simple/login",
        token=None,
        json={"username": "ANN@example.io", "password": PASSWORD},
    )
    assert response.status == 429
    assert int(response.headers["Retry-After"]) > 0
    assert "Too many failed sign-ins" in (await response.json())["message"]
    # Another account from the same address: two more failures use up the address.
    for _ in range(2):
        await _login(api, "bob@example.io", "Wrong-Horse-9", status=401)
    await _login(api, "carol@example.io", "Wrong-Horse-9", status=429)


def _change(old: str, new: str, confirm: str) -> dict[str, str]:
    return {"password": new, "confirmPassword": confirm, "oldPassword": old}


async def test_a_user_changes_their_own_password_keeping_this_session_only(
    api: Api, service: Service
) -> None:
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    other = service.sessions.sign_in("ann@example.io", PASSWORD, lifetime=dt.timedelta(hours=1))
    await _login(api, "ann@example.io", PASSWORD)
    change = "/api/admin/user/change-password"
    new = "New-Horse-77"
    wrong = await api.json("POST", change, 400, token=None, json=_change("x", new, new))
    assert wrong["details"][0]["path"] == "$.oldPassword"
    mismatch = await api.json(
        "POST", change, 400, token=None, json=_change(PASSWORD, new, new + "8")
    )
    assert mismatch["details"][0]["path"] == "$.confirmPassword"
    await api.json("POST", change, token=None, json=_change(PASSWORD, new, new))
    await api.json("GET", "/api/admin/user", token=None)  # this session stays
    assert service.sessions.holder(other.secret) is None  # the other one ended
    await _login(api, "ann@example.io", new)


async def test_a_browser_sessions_writes_must_be_json_from_this_origin(api: Api) -> None:
    """A page on another port of the same host gets the cookie sent along (same site), and
    a plain form or a bodyless POST needs no preflight: such writes are refused."""
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    await _login(api, "ann@example.io", PASSWORD)
    body = '{"id": "p", "name": "P"}'
    for headers in (
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
    ):
        response = await api.request(
            "POST", "/api/admin/projects", token=None, data=body, headers=headers
        )
        assert response.status == 403, headers
    bodyless = await api.request(
        "POST", "/api/admin/projects/default/features/f/environments/development/on", token=None
    )
    assert bodyless.status == 403
    projects = await api.json("GET", "/api/admin/projects")
    assert "p" not in [p["id"] for p in projects["projects"]]
    cross = {"Sec-Fetch-Site": "same-site"}
    refused = await api.request("DELETE", "/api/admin/projects/default", token=None, headers=cross)
    assert refused.status == 403
    await api.json(
        "POST",
        "/api/admin/projects",
        status=201,
        token=None,
        data=body,
        headers={"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"},
    )
    await api.json("DELETE", "/api/admin/projects/p", token=None)  # same origin, no body


async def test_a_page_of_another_site_cannot_sign_one_out(api: Api) -> None:
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    await _login(api, "ann@example.io", PASSWORD)
    for site in ("same-site", "cross-site"):
        refused = await api.request("POST", "/logout", token=None, headers={"Sec-Fetch-Site": site})
        assert refused.status == 403, site
    await api.json("GET", "/api/admin/user", token=None)  # still signed in
    await api.json("POST", "/logout", token=None, headers={"Sec-Fetch-Site": "same-origin"})
    await api.json("GET", "/api/admin/user", 401, token=None)


async def test_sign_ins_under_any_name_never_lock_a_user_out_of_their_own_password(
    tight_api: Api, service: Service
) -> None:
    """The own-password check is counted apart from every login a sign-in can name."""
    api = tight_api
    created = await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    await _login(api, "ann@example.io", PASSWORD)
    for name in (
        f"user-id:{created['id']}",
        f"USER-ID:{created['id']}",
        f"User-Id:{created['id']}",
    ):
        await _login(api, name, "Wrong-Horse-9", status=401)
    change = "/api/admin/user/change-password"
    new = "New-Horse-77"
    await api.json("POST", change, token=None, json=_change(PASSWORD, new, new))


async def test_sign_ins_beyond_the_password_queue_are_503_with_retry_after(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hashes run at once and a bounded number wait; a flood past it is refused at
    once (the bound is lowered here so a handful of requests reach it)."""
    await _create(api, email="ann@example.io", rootRole=1, password=PASSWORD)
    monkeypatch.setattr(signed_in, "MAX_WAITING_PASSWORD_WORK", 2)
    body = {"username": "ann@example.io", "password": "Wrong-Horse-9"}
    answers = await asyncio.gather(
        *(api.request("POST", "/auth/simple/login", token=None, json=body) for _ in range(8))
    )
    statuses = sorted(a.status for a in answers)
    assert statuses.count(401) >= 2
    assert 503 in statuses
    refused = next(a for a in answers if a.status == 503)
    assert refused.headers["Retry-After"] == "1"
    await _login(api, "ann@example.io", PASSWORD)  # the queue drained: signing in works
