"""Roles and project access over HTTP, in Unleash's shapes (issue 28)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.http.conftest import Api


async def test_a_custom_project_role_is_created_listed_read_changed_and_deleted(
    api: Api,
) -> None:
    body: dict[str, Any] = {
        "name": "Dev toggler",
        "description": "turns flags on in development",
        "type": "custom",
        "permissions": [{"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}],
    }
    created = await api.json("POST", "/api/admin/roles", json=body)
    assert created == {"id": 6, **body}
    listed = await api.json("GET", "/api/admin/roles")
    assert listed["version"] == 1
    assert [(r["id"], r["name"], r["type"]) for r in listed["roles"]] == [
        (1, "Admin", "root"),
        (2, "Editor", "root"),
        (3, "Viewer", "root"),
        (4, "Owner", "project"),
        (5, "Member", "project"),
        (6, "Dev toggler", "custom"),
    ]
    assert await api.json("GET", "/api/admin/roles/6") == created
    changed = await api.json("PUT", "/api/admin/roles/6", json={**body, "permissions": []})
    assert changed["permissions"] == []
    await api.json("DELETE", "/api/admin/roles/6")
    await api.json("GET", "/api/admin/roles/6", status=404)


async def test_bad_role_bodies_are_400s_naming_the_field_and_nothing_is_stored(
    api: Api,
) -> None:
    for body, path in [
        ({}, "$.name"),
        ({"name": "x", "permissions": [{"name": "FLY"}]}, "$.permissions[0].name"),
        ({"name": "x", "type": "root"}, "$.type"),
        ({"name": "x", "permissions": [{"name": "CREATE_SEGMENT"}]}, "$.permissions[0].name"),
    ]:
        refused = await api.json("POST", "/api/admin/roles", status=400, json=body)
        assert path in [d["path"] for d in refused["details"]], (body, refused)
    assert len((await api.json("GET", "/api/admin/roles"))["roles"]) == 5


async def test_predefined_roles_are_read_only(api: Api) -> None:
    await api.json("PUT", "/api/admin/roles/2", status=400, json={"name": "Boss", "type": "root"})
    await api.json("DELETE", "/api/admin/roles/5", status=400)


async def test_a_projects_access_list_shows_who_holds_which_role(api: Api) -> None:
    user = await api.json(
        "POST", "/api/admin/user-admin", status=201, json={"email": "dee@x.io", "rootRole": 3}
    )
    await api.json(
        "POST", "/api/admin/projects/default/access", json={"roles": [5], "users": [user["id"]]}
    )
    access = await api.json("GET", "/api/admin/projects/default/access")
    assert access["users"] == [{"id": user["id"], "email": "dee@x.io", "name": None, "roles": [5]}]
    assert [r["name"] for r in access["roles"]] == ["Owner", "Member"]
    assert access["groups"] == []
    path = f"/api/admin/projects/default/users/{user['id']}/roles"
    await api.json("PUT", path, json={"roles": [4]})
    access = await api.json("GET", "/api/admin/projects/default/access")
    assert access["users"][0]["roles"] == [4]
    await api.json("DELETE", path)
    assert (await api.json("GET", "/api/admin/projects/default/access"))["users"] == []


PASSWORD = "Correct-Horse-9"


async def _root_custom(api: Api, name: str, *permissions: str) -> int:
    body = {"name": name, "type": "root-custom", "permissions": [{"name": p} for p in permissions]}
    role_id: int = (await api.json("POST", "/api/admin/roles", json=body))["id"]
    return role_id


async def test_a_custom_root_role_is_given_to_a_user_who_may_then_do_exactly_that(
    api: Api,
) -> None:
    makes_projects = await _root_custom(api, "Project maker", "CREATE_PROJECT")
    body = {"email": "pm@x.io", "rootRole": makes_projects, "password": PASSWORD}
    made = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    assert made["rootRole"] == makes_projects
    listed = await api.json("GET", "/api/admin/user-admin")
    assert [(u["email"], u["rootRole"]) for u in listed["users"]] == [("pm@x.io", makes_projects)]
    assert (makes_projects, "Project maker", "root-custom") in [
        (r["id"], r["name"], r["type"]) for r in listed["rootRoles"]
    ]
    login = {"username": "pm@x.io", "password": PASSWORD}
    await api.json("POST", "/auth/simple/login", token=None, json=login)
    project = {"id": "theirs", "name": "Theirs"}
    await api.json("POST", "/api/admin/projects", status=201, token=None, json=project)
    flag = {"name": "not-theirs-to-make"}
    refused = await api.json(
        "POST", "/api/admin/projects/theirs/features", status=403, token=None, json=flag
    )
    assert "CREATE_FEATURE" in refused["message"]
    await api.json("GET", "/api/admin/user-admin", status=403, token=None)
    # Back to a predefined role, by name: the custom one no longer applies.
    user = f"/api/admin/user-admin/{made['id']}"
    assert (await api.json("PUT", user, json={"rootRole": "Editor"}))["rootRole"] == 2
    await api.json("POST", "/api/admin/projects/theirs/features", status=201, token=None, json=flag)


async def test_a_custom_root_role_holding_admin_manages_users(api: Api) -> None:
    admins = await _root_custom(api, "People admin", "ADMIN")
    body = {"email": "pa@x.io", "rootRole": admins, "password": PASSWORD}
    await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    login = {"username": "pa@x.io", "password": PASSWORD}
    await api.json("POST", "/auth/simple/login", token=None, json=login)
    assert len((await api.json("GET", "/api/admin/user-admin", token=None))["users"]) == 1


async def test_a_service_accounts_token_acts_with_its_custom_root_role(api: Api) -> None:
    segments = await _root_custom(api, "Segmenter", "CREATE_SEGMENT")
    body = {"name": "Bot", "username": "bot", "rootRole": segments}
    account = await api.json("POST", "/api/admin/service-account", status=201, json=body)
    assert account["rootRole"] == segments
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).isoformat()
    path = f"/api/admin/service-account/{account['id']}/token"
    secret = (
        await api.json("POST", path, status=201, json={"description": "d", "expiresAt": expires})
    )["secret"]
    segment = {"name": "s", "constraints": []}
    await api.json("POST", "/api/admin/segments", status=201, token=secret, json=segment)
    await api.json(
        "POST", "/api/admin/projects", status=403, token=secret, json={"id": "p", "name": "P"}
    )


async def test_a_root_role_that_is_not_one_is_a_400_at_root_role_and_nothing_is_made(
    api: Api,
) -> None:
    project_role = (
        await api.json("POST", "/api/admin/roles", json={"name": "P", "type": "custom"})
    )["id"]
    for root_role in (project_role, 4, 999, 0, "Owner", True, None):
        body = {"email": "no@x.io", "rootRole": root_role}
        refused = await api.json("POST", "/api/admin/user-admin", status=400, json=body)
        assert [d["path"] for d in refused["details"]] == ["$.rootRole"], (root_role, refused)
    assert (await api.json("GET", "/api/admin/user-admin"))["users"] == []


async def test_a_custom_root_role_held_by_someone_cannot_be_deleted(api: Api) -> None:
    role = await _root_custom(api, "Held", "CREATE_SEGMENT")
    body = {"email": "h@x.io", "rootRole": role}
    user = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    await api.json("DELETE", f"/api/admin/roles/{role}", status=409)
    await api.json("PUT", f"/api/admin/user-admin/{user['id']}", json={"rootRole": 3})
    await api.json("DELETE", f"/api/admin/roles/{role}")
