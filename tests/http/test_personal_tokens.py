"""Personal access tokens over HTTP, in Unleash's shape (``/api/admin/user/tokens``): a
token acts as its owner, expires, and stops with its owner (issue 28). A real server on
127.0.0.1 over a real SQLite file, with a clock the test moves."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import ADMIN, CLIENT, Api

PASSWORD = "Correct-Horse-9"
TOKENS = "/api/admin/user/tokens"
START = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed_service(tmp_path: Path, clock: Clock) -> Iterator[Service]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store, clock=clock)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.tokens.create_token(
        "sdk", "client", projects=["default"], environment="development", secret=CLIENT
    )
    yield service
    store.close()


@pytest.fixture
async def api(timed_service: Service) -> AsyncIterator[Api]:
    app = create_app(timed_service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _in(days: float) -> str:
    return (START + dt.timedelta(days=days)).isoformat().replace("+00:00", "Z")


async def _user(api: Api, email: str, name: str, role: str = "Admin") -> int:
    body = {"email": email, "name": name, "rootRole": role, "password": PASSWORD}
    created = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    return int(created["id"])


async def _signed_in(api: Api, email: str) -> None:
    await api.json(
        "POST",
        "/auth/simple/login",
        token=None,
        json={"username": email, "password": PASSWORD},
    )


async def _new_pat(api: Api, description: str = "ci", days: float = 30) -> Any:
    """A PAT made by whoever is signed in with the client's cookie."""
    return await api.json(
        "POST",
        TOKENS,
        status=201,
        token=None,
        json={"description": description, "expiresAt": _in(days)},
    )


async def test_a_pat_is_shown_once_and_acts_on_the_admin_api_as_its_owner(api: Api) -> None:
    ann = await _user(api, "ann@example.io", "Ann")
    await _signed_in(api, "ann@example.io")
    created = await _new_pat(api, "deploys")
    secret = created["secret"]
    assert secret.startswith("user:")
    assert (created["description"], created["userId"], created["expiresAt"]) == (
        "deploys",
        ann,
        "2026-12-01T12:00:00.000Z",
    )
    listed = await api.json("GET", TOKENS, token=None)
    assert [(p["id"], p["description"]) for p in listed["pats"]] == [(created["id"], "deploys")]
    assert "secret" not in listed["pats"][0]
    api.client.session.cookie_jar.clear()  # from here on, only the PAT
    me = await api.json("GET", "/api/admin/user", token=secret)
    assert (me["id"], me["email"]) == (ann, "ann@example.io")
    await api.json(
        "POST", "/api/admin/projects", status=201, token=secret, json={"id": "p", "name": "P"}
    )
    events = await api.json("GET", "/api/admin/events")
    assert events["events"][0]["createdBy"] == f"user:{ann}:Ann (personal token {created['id']})"
    # A PAT is for the admin API only: SDK paths refuse it.
    await api.json("GET", "/api/client/features", status=401, token=secret)


async def test_a_members_pat_may_write_in_their_project_and_not_in_another(api: Api) -> None:
    """A PAT acts with every role its owner holds, project roles included (Unleash:
    a PAT has its user's permissions), not only their root role."""
    for project in ("alpha", "beta"):
        body = {"id": project, "name": project.title()}
        await api.json("POST", "/api/admin/projects", status=201, json=body)
    mem = await _user(api, "mem@example.io", "Mem", role="Viewer")
    access = {"roles": [5], "users": [mem]}  # 5: Member
    await api.json("POST", "/api/admin/projects/beta/access", json=access)
    await _signed_in(api, "mem@example.io")
    secret = (await _new_pat(api))["secret"]
    api.client.session.cookie_jar.clear()
    await api.json(
        "POST", "/api/admin/projects/beta/features", status=201, token=secret, json={"name": "b"}
    )
    before = (await api.json("GET", "/api/admin/events"))["events"]
    refused = await api.json(
        "POST", "/api/admin/projects/alpha/features", status=403, token=secret, json={"name": "a"}
    )
    assert "CREATE_FEATURE" in refused["message"]
    assert (await api.json("GET", "/api/admin/events"))["events"] == before
    alpha = await api.json("GET", "/api/admin/projects/alpha/features")
    assert alpha["features"] == []


async def test_an_expired_pat_is_refused(api: Api, clock: Clock) -> None:
    await _user(api, "ann@example.io", "Ann")
    await _signed_in(api, "ann@example.io")
    secret = (await _new_pat(api, days=1))["secret"]
    api.client.session.cookie_jar.clear()
    await api.json("GET", "/api/admin/projects", token=secret)
    clock.now = START + dt.timedelta(days=1)
    refused = await api.json("GET", "/api/admin/projects", status=401, token=secret)
    assert "expired" in refused["message"]


async def test_a_disabled_or_deleted_owners_pats_are_refused_at_once(api: Api) -> None:
    ann = await _user(api, "ann@example.io", "Ann")
    await _signed_in(api, "ann@example.io")
    secret = (await _new_pat(api))["secret"]
    api.client.session.cookie_jar.clear()
    user = f"/api/admin/user-admin/{ann}"
    await api.json("GET", "/api/admin/projects", token=secret)
    await api.json("PUT", user, json={"disabled": True})
    await api.json("GET", "/api/admin/projects", status=401, token=secret)
    await api.json("PUT", user, json={"disabled": False})
    await api.json("GET", "/api/admin/projects", token=secret)
    await api.json("DELETE", user)
    await api.json("GET", "/api/admin/projects", status=401, token=secret)


async def test_a_pat_cannot_see_or_delete_another_users_pats(api: Api) -> None:
    await _user(api, "ann@example.io", "Ann")
    await _user(api, "bob@example.io", "Bob")
    await _signed_in(api, "ann@example.io")
    anns = await _new_pat(api, "ann's")
    await _signed_in(api, "bob@example.io")
    bobs = await _new_pat(api, "bob's")
    api.client.session.cookie_jar.clear()
    listed = await api.json("GET", TOKENS, token=bobs["secret"])
    assert [p["description"] for p in listed["pats"]] == ["bob's"]
    await api.json("DELETE", f"{TOKENS}/{anns['id']}", status=404, token=bobs["secret"])
    await api.json("GET", "/api/admin/projects", token=anns["secret"])  # still works
    await api.json("DELETE", f"{TOKENS}/{bobs['id']}", token=anns["secret"], status=404)
    # Its owner deletes it: refused at once.
    await api.json("DELETE", f"{TOKENS}/{anns['id']}", token=anns["secret"])
    await api.json("GET", "/api/admin/projects", status=401, token=anns["secret"])


async def test_an_admin_api_token_has_no_personal_tokens(api: Api) -> None:
    await api.json("GET", TOKENS, status=403)
    await api.json("POST", TOKENS, status=403, json={"description": "x", "expiresAt": _in(1)})


async def test_bad_pat_bodies_are_400s_naming_the_field_and_nothing_is_created(
    api: Api,
) -> None:
    await _user(api, "ann@example.io", "Ann")
    await _signed_in(api, "ann@example.io")
    for body, path in [
        ({"description": "ci"}, "$.expiresAt"),
        ({"expiresAt": _in(1)}, "$.description"),
        ({"description": "ci", "expiresAt": _in(-1)}, "$.expiresAt"),
        ({"description": "ci", "expiresAt": _in(367)}, "$.expiresAt"),
        ({"description": "ci", "expiresAt": "2026-12-01"}, "$.expiresAt"),
        ({"description": "ci", "expiresAt": "2026-12-01T00:00:00"}, "$.expiresAt"),
        ({"description": "ci", "expiresAt": "soon"}, "$.expiresAt"),
        ({"description": " ", "expiresAt": _in(1)}, "$.description"),
        ({"description": "ci", "expiresAt": 5}, "$.expiresAt"),
    ]:
        refused = await api.json("POST", TOKENS, status=400, token=None, json=body)
        assert [d["path"] for d in refused["details"]] == [path], body
    assert (await api.json("GET", TOKENS, token=None))["pats"] == []
    await _new_pat(api, "ci")
    taken = await api.json(
        "POST", TOKENS, status=409, token=None, json={"description": "ci", "expiresAt": _in(2)}
    )
    assert taken["details"][0]["path"] == "$.description"


async def test_a_user_holds_at_most_ten_pats(api: Api) -> None:
    await _user(api, "ann@example.io", "Ann")
    await _signed_in(api, "ann@example.io")
    for number in range(10):
        await _new_pat(api, f"token {number}")
    refused = await api.json(
        "POST",
        TOKENS,
        status=400,
        token=None,
        json={"description": "one more", "expiresAt": _in(1)},
    )
    assert "Too many" in refused["message"]


async def test_a_made_up_pat_is_a_401(api: Api) -> None:
    await api.json("GET", "/api/admin/projects", status=401, token="user:" + "0" * 56)


SERVICE_ACCOUNTS = "/api/admin/service-account"


async def _service_account(api: Api, username: str = "deployer", role: str = "Editor") -> Any:
    body = {"name": "Deployer", "username": username, "rootRole": role}
    return await api.json("POST", SERVICE_ACCOUNTS, status=201, json=body)


async def test_a_service_account_is_made_changed_and_listed_with_its_tokens(api: Api) -> None:
    account = await _service_account(api)
    assert (account["name"], account["username"], account["rootRole"], account["tokens"]) == (
        "Deployer",
        "deployer",
        2,
        [],
    )
    path = f"{SERVICE_ACCOUNTS}/{account['id']}"
    created = await api.json(
        "POST", path + "/token", status=201, json={"description": "ci", "expiresAt": _in(30)}
    )
    assert created["secret"].startswith("user:")
    changed = await api.json("PUT", path, json={"rootRole": "Admin", "name": "Deploy bot"})
    assert (changed["rootRole"], changed["name"], changed["username"]) == (
        1,
        "Deploy bot",
        "deployer",
    )
    listed = await api.json("GET", SERVICE_ACCOUNTS)
    assert [
        (a["username"], [t["description"] for t in a["tokens"]]) for a in listed["serviceAccounts"]
    ] == [("deployer", ["ci"])]
    assert "secret" not in listed["serviceAccounts"][0]["tokens"][0]
    assert [r["name"] for r in listed["rootRoles"]] == ["Admin", "Editor", "Viewer"]
    tokens = await api.json("GET", path + "/token")
    assert [t["id"] for t in tokens["pats"]] == [created["id"]]
    # Not one of the people: the user admin routes neither list nor reach it.
    assert (await api.json("GET", "/api/admin/user-admin"))["users"] == []
    await api.json("GET", f"/api/admin/user-admin/{account['id']}", status=404)


async def test_a_service_accounts_token_acts_as_the_account_and_is_named_in_the_log(
    api: Api,
) -> None:
    account = await _service_account(api)
    path = f"{SERVICE_ACCOUNTS}/{account['id']}"
    token = await api.json(
        "POST", path + "/token", status=201, json={"description": "ci", "expiresAt": _in(30)}
    )
    secret = token["secret"]
    me = await api.json("GET", "/api/admin/user", token=secret)
    assert (me["id"], me["username"], me["rootRole"], me["accountType"]) == (
        account["id"],
        "deployer",
        2,
        "Service Account",
    )
    await api.json(
        "POST", "/api/admin/projects", status=201, token=secret, json={"id": "p", "name": "P"}
    )
    events = await api.json("GET", "/api/admin/events")
    assert events["events"][0]["createdBy"] == (
        f"service-account:{account['id']}:Deployer (token {token['id']})"
    )
    # Its token manages nothing of its own, and it is not an admin.
    await api.json("GET", TOKENS, status=403, token=secret)
    await api.json("GET", SERVICE_ACCOUNTS, status=403, token=secret)
    # Deleting the token, then the account, stops it at once.
    await api.json("DELETE", f"{path}/token/{token['id']}")
    await api.json("GET", "/api/admin/projects", status=401, token=secret)
    again = await api.json(
        "POST", path + "/token", status=201, json={"description": "ci", "expiresAt": _in(30)}
    )
    await api.json("DELETE", path)
    await api.json("GET", "/api/admin/projects", status=401, token=again["secret"])
    await api.json("GET", path + "/token", status=404)


async def test_a_service_account_cannot_sign_in_or_get_a_password(api: Api) -> None:
    account = await _service_account(api)
    await api.json(
        "POST",
        "/auth/simple/login",
        status=401,
        token=None,
        json={"username": "deployer", "password": PASSWORD},
    )
    await api.json(
        "POST", "/api/admin/user-admin/reset-password", status=404, json={"id": "deployer"}
    )
    await api.json(
        "POST",
        f"/api/admin/user-admin/{account['id']}/change-password",
        status=404,
        json={"password": PASSWORD},
    )


async def test_only_admins_manage_service_accounts(api: Api) -> None:
    await _user(api, "ed@example.io", "Ed", role="Editor")
    await _signed_in(api, "ed@example.io")
    await api.json("GET", SERVICE_ACCOUNTS, status=403, token=None)
    refused = await api.json(
        "POST",
        SERVICE_ACCOUNTS,
        status=403,
        token=None,
        json={"name": "x", "username": "x", "rootRole": 1},
    )
    assert "Admin" in refused["message"]
    assert (await api.json("GET", SERVICE_ACCOUNTS))["serviceAccounts"] == []


async def test_bad_service_account_bodies_are_400s_and_taken_usernames_409s(api: Api) -> None:
    await _user(api, "ann@example.io", "Ann")
    for body, path in [
        ({"name": "x", "rootRole": 1}, "$.username"),
        ({"username": "x", "rootRole": 1}, "$.name"),
        ({"name": "x", "username": "x"}, "$.rootRole"),
        ({"name": "x", "username": "a b", "rootRole": 1}, "$.username"),
        ({"name": "x", "username": "x", "rootRole": 9}, "$.rootRole"),
    ]:
        refused = await api.json("POST", SERVICE_ACCOUNTS, status=400, json=body)
        assert [d["path"] for d in refused["details"]] == [path], body
    await _service_account(api, "deployer")
    taken = await api.json(
        "POST",
        SERVICE_ACCOUNTS,
        status=409,
        json={"name": "x", "username": "DEPLOYER", "rootRole": 1},
    )
    assert taken["details"][0]["path"] == "$.username"
    assert len((await api.json("GET", SERVICE_ACCOUNTS))["serviceAccounts"]) == 1


async def test_a_pat_is_refused_on_a_second_server_as_soon_as_its_owner_is_disabled(
    tmp_path: Path, clock: Clock
) -> None:
    """Two servers over one SQLite file: a change made on one is seen by the other at its
    next request (nothing cached against the store)."""
    path = tmp_path / "shared.db"
    stores = [SqliteStore(path), SqliteStore(path)]
    first, second = Service(stores[0], clock=clock), Service(stores[1], clock=clock)
    first.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    try:
        async with (
            TestClient(TestServer(create_app(first, ServerConfig()), host="127.0.0.1")) as one,
            TestClient(TestServer(create_app(second, ServerConfig()), host="127.0.0.1")) as two,
        ):
            a, b = Api(one), Api(two)
            ann = await _user(a, "ann@example.io", "Ann")
            await _signed_in(a, "ann@example.io")
            secret = (await _new_pat(a))["secret"]
            await b.json("GET", "/api/admin/projects", token=secret)
            await a.json("PUT", f"/api/admin/user-admin/{ann}", json={"disabled": True})
            await b.json("GET", "/api/admin/projects", status=401, token=secret)
            await a.json("PUT", f"/api/admin/user-admin/{ann}", json={"disabled": False})
            await b.json("GET", "/api/admin/projects", token=secret)
            await a.json("DELETE", f"/api/admin/user-admin/{ann}")
            await b.json("GET", "/api/admin/projects", status=401, token=secret)
    finally:
        for store in stores:
            store.close()
