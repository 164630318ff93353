"""Groups over HTTP, in Unleash's shapes (issue 28): made, listed, read, changed and
deleted; given project roles on a project's access list; and what a member may do is
their own roles and their groups' together, in the one permission table."""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp.test_utils import TestClient

from flagcore.people import RootRole
from flagcore.service import NewUser, Service
from flagcore_http.session_cookie import COOKIE_NAME, SIGNER
from tests.http.conftest import Api
from tests.http.test_change_requests import send

GROUPS = "/api/admin/groups"
ACCESS = "/api/admin/projects/{project}/access"


def _signed_in(service: Service, client: TestClient[Any, Any], name: str) -> tuple[int, Any]:
    """A Viewer named ``name``, signed in: their id and their request headers."""
    user = service.users.create_user(NewUser(RootRole.VIEWER, email=f"{name}@x.io", name=name))
    started = service.sessions.start(user_id=user.id, lifetime=dt.timedelta(1))
    signer = client.app[SIGNER]  # type: ignore[index]
    cookie = signer.cookie_value(signer.new_session(started.secret))
    return user.id, {"Cookie": f"{COOKIE_NAME}={cookie}", "Content-Type": "application/json"}


async def _user(api: Api, email: str) -> int:
    made = await api.json(
        "POST", "/api/admin/user-admin", status=201, json={"email": email, "rootRole": 3}
    )
    user_id: int = made["id"]
    return user_id


async def test_a_group_is_made_listed_read_replaced_and_deleted_in_unleashs_shape(
    api: Api,
) -> None:
    ann, bob = await _user(api, "ann@x.io"), await _user(api, "bob@x.io")
    body = {
        "name": "Platform",
        "description": "the platform team",
        "mappingsSSO": ["platform-devs"],
        "rootRole": 2,
        "users": [{"user": {"id": ann}}],
    }
    made = await api.json("POST", GROUPS, json=body)
    assert {k: made[k] for k in ("name", "description", "mappingsSSO", "rootRole")} == {
        "name": "Platform",
        "description": "the platform team",
        "mappingsSSO": ["platform-devs"],
        "rootRole": 2,
    }
    assert made["createdBy"] == "token:admin"
    assert made["userCount"] == 1
    assert [(u["user"]["id"], u["user"]["email"], u["createdBy"]) for u in made["users"]] == [
        (ann, "ann@x.io", "token:admin")
    ]
    assert made["projects"] == []
    assert await api.json("GET", f"{GROUPS}/{made['id']}") == made
    assert (await api.json("GET", GROUPS))["groups"] == [made]

    # An update replaces the group whole, its members too; Ann stays with her joining time.
    changed = await api.json(
        "PUT",
        f"{GROUPS}/{made['id']}",
        json={"name": "Platform", "users": [{"user": {"id": bob}}, {"user": {"id": ann}}]},
    )
    assert changed["description"] is None
    assert changed["mappingsSSO"] == []
    assert changed["rootRole"] is None
    joined = {u["user"]["id"]: u["joinedAt"] for u in changed["users"]}
    assert joined.keys() == {ann, bob}
    assert joined[ann] == made["users"][0]["joinedAt"]

    events = (await api.json("GET", "/api/admin/events"))["events"]
    updated = next(e for e in events if e["type"] == "group-updated")
    assert updated["preData"]["users"] == [ann]
    assert sorted(updated["data"]["users"]) == sorted([ann, bob])

    await api.json("DELETE", f"{GROUPS}/{made['id']}")
    await api.json("GET", f"{GROUPS}/{made['id']}", status=404)
    await api.json("DELETE", f"{GROUPS}/{made['id']}", status=404)
    assert "group-deleted" in [
        e["type"] for e in (await api.json("GET", "/api/admin/events"))["events"]
    ]


async def test_bad_group_bodies_are_400s_naming_the_field_and_nothing_is_made(api: Api) -> None:
    ann = await _user(api, "ann@x.io")
    project_role = (await api.json("POST", "/api/admin/roles", json={"name": "P"}))["id"]
    bot = await api.json(
        "POST",
        "/api/admin/service-account",
        status=201,
        json={"name": "Bot", "username": "bot", "rootRole": 3},
    )
    for body, path in [
        ({}, "$.name"),
        ({"name": "  "}, "$.name"),
        ({"name": "g", "rootRole": 4}, "$.rootRole"),
        ({"name": "g", "rootRole": project_role}, "$.rootRole"),
        ({"name": "g", "rootRole": "Admin"}, "$.rootRole"),
        ({"name": "g", "users": [{"user": {"id": 999}}]}, "$.users[0].user.id"),
        ({"name": "g", "users": [{"user": {"id": bot["id"]}}]}, "$.users[0].user.id"),
        (
            {"name": "g", "users": [{"user": {"id": ann}}, {"user": {"id": ann}}]},
            "$.users[1].user.id",
        ),
        ({"name": "g", "users": [{"id": ann}]}, "$.users[0].user"),
        ({"name": "g", "mappingsSSO": ["a", "a"]}, "$.mappingsSSO[1]"),
        ({"name": "g", "mappingsSSO": [""]}, "$.mappingsSSO[0]"),
        ({"name": "g", "mappingsSSO": [f"g{i}" for i in range(101)]}, "$.mappingsSSO"),
    ]:
        refused = await api.json("POST", GROUPS, status=400, json=body)
        assert path in [d["path"] for d in refused["details"]], (body, refused)
    await api.json("POST", GROUPS, json={"name": "Taken"})
    refused = await api.json("POST", GROUPS, status=409, json={"name": "taken"})
    assert [d["path"] for d in refused["details"]] == ["$.name"]
    assert [g["name"] for g in (await api.json("GET", GROUPS))["groups"]] == ["Taken"]


async def test_groups_are_given_project_roles_on_the_access_list(api: Api) -> None:
    ann = await _user(api, "ann@x.io")
    group = await api.json("POST", GROUPS, json={"name": "Devs", "users": [{"user": {"id": ann}}]})
    access = ACCESS.format(project="default")
    await api.json("POST", access, json={"roles": [5], "groups": [group["id"]]})
    listed = await api.json("GET", access)
    assert listed["users"] == []
    ((row,),) = [listed["groups"]]
    assert (row["id"], row["name"], row["roles"]) == (group["id"], "Devs", [5])
    assert [u["user"]["id"] for u in row["users"]] == [ann]
    assert (await api.json("GET", f"{GROUPS}/{group['id']}"))["projects"] == ["default"]

    roles = f"/api/admin/projects/default/groups/{group['id']}/roles"
    await api.json("PUT", roles, json={"roles": [4]})
    assert (await api.json("GET", access))["groups"][0]["roles"] == [4]
    refused = await api.json(
        "PUT", "/api/admin/projects/default/groups/999/roles", status=400, json={"roles": [4]}
    )
    assert [d["path"] for d in refused["details"]] == ["$.groups[0]"]
    refused = await api.json(
        "POST", access, status=400, json={"roles": [1], "groups": [group["id"]]}
    )
    assert [d["path"] for d in refused["details"]] == ["$.roles[0]"]
    # A role a group holds cannot be deleted; a group's root role neither.
    custom = (await api.json("POST", "/api/admin/roles", json={"name": "Custom"}))["id"]
    await api.json("PUT", roles, json={"roles": [custom]})
    await api.json("DELETE", f"/api/admin/roles/{custom}", status=409)
    await api.json("DELETE", roles)
    assert (await api.json("GET", access))["groups"] == []
    await api.json("DELETE", f"/api/admin/roles/{custom}")
    root = (
        await api.json("POST", "/api/admin/roles", json={"name": "Root", "type": "root-custom"})
    )["id"]
    await api.json("PUT", f"{GROUPS}/{group['id']}", json={"name": "Devs", "rootRole": root})
    await api.json("DELETE", f"/api/admin/roles/{root}", status=409)


async def test_a_member_of_a_group_owning_a_project_writes_there_and_a_non_member_cannot(
    api: Api, service: Service
) -> None:
    client = api.client
    service.projects.create_project("beta", "Beta")
    ann, ann_headers = _signed_in(service, client, "ann")
    _bob, bob_headers = _signed_in(service, client, "bob")
    group = await api.json(
        "POST", GROUPS, json={"name": "Owners", "users": [{"user": {"id": ann}}]}
    )
    await api.json(
        "POST", ACCESS.format(project="beta"), json={"roles": [4], "groups": [group["id"]]}
    )
    flags = "/api/admin/projects/beta/features"
    assert (await send(client, "POST", flags, ann_headers, {"name": "by-ann"}))[0] == 201
    status, refused = await send(client, "POST", flags, bob_headers, {"name": "by-bob"})
    assert status == 403
    assert "CREATE_FEATURE" in refused["message"]
    # The group's Owner role reaches beta only, and the project's access list too.
    assert (
        await send(
            client, "POST", "/api/admin/projects/default/features", ann_headers, {"name": "x"}
        )
    )[0] == 403
    status, _ = await send(
        client, "POST", ACCESS.format(project="beta"), ann_headers, {"roles": [5], "users": [_bob]}
    )
    assert status == 200
    # Out of the group, Ann loses it at her next request; Bob keeps his own Member role.
    await api.json("PUT", f"{GROUPS}/{group['id']}", json={"name": "Owners"})
    assert (await send(client, "POST", flags, ann_headers, {"name": "again"}))[0] == 403
    assert (await send(client, "POST", flags, bob_headers, {"name": "by-bob"}))[0] == 201
    names = [f["name"] for f in (await api.json("GET", flags))["features"]]
    assert sorted(names) == ["by-ann", "by-bob"]


async def test_a_groups_root_role_adds_to_its_members_own(api: Api, service: Service) -> None:
    client = api.client
    ann, ann_headers = _signed_in(service, client, "ann")
    segment = {"name": "s", "constraints": []}
    assert (await send(client, "POST", "/api/admin/segments", ann_headers, segment))[0] == 403
    await api.json(
        "POST", GROUPS, json={"name": "Editors", "rootRole": 2, "users": [{"user": {"id": ann}}]}
    )
    assert (await send(client, "POST", "/api/admin/segments", ann_headers, segment))[0] == 201
    # Still not an Admin: the group gives Editor, no more.
    assert (await send(client, "GET", "/api/admin/user-admin", ann_headers))[0] == 403
