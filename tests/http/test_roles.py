"""Roles and project access over HTTP, in Unleash's shapes (issue 28)."""

from __future__ import annotations

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
