"""The Roles page and a project's Access page (issue 28) in Chromium: custom roles made,
refused as typed, changed and deleted; project roles given to a person and a service
account and taken away; a Viewer reads both pages and finds no form."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

PASSWORD = "Correct-Horse-9"


def _role_named(server: Server, name: str) -> dict[str, Any] | None:
    roles = server.api("GET", "/api/admin/roles")["roles"]
    found = next((r for r in roles if r["name"] == name), None)
    return None if found is None else server.api("GET", f"/api/admin/roles/{found['id']}")


def test_an_admin_makes_changes_and_deletes_a_custom_role_and_a_refusal_keeps_the_form(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    page.get_by_role("link", name="Roles", exact=True).click()
    editor = page.get_by_role("row", name="Editor")
    expect(editor).to_contain_text("CREATE_FEATURE")
    expect(page.get_by_role("link", name="Edit role Editor")).to_have_count(0)  # predefined

    page.get_by_label("Name", exact=True).fill("Editor")  # taken by a predefined role
    page.get_by_label("Kind").select_option(label="project role")
    page.get_by_label("UPDATE_FEATURE_ENVIRONMENT in development").check()
    page.get_by_role("button", name="Create role").click()
    expect(page.get_by_role("alert")).to_contain_text('a role named "Editor" already exists')
    expect(page.get_by_label("Name", exact=True)).to_have_value("Editor")
    expect(page.get_by_label("UPDATE_FEATURE_ENVIRONMENT in development")).to_be_checked()
    assert len(server.api("GET", "/api/admin/roles")["roles"]) == 5

    page.get_by_label("Name", exact=True).fill("Dev toggler")
    page.get_by_role("button", name="Create role").click()
    expect(page.get_by_role("status")).to_have_text("Role “Dev toggler” saved.")
    expect(page.get_by_role("row", name="Dev toggler")).to_contain_text(
        "UPDATE_FEATURE_ENVIRONMENT in development"
    )
    shot(page, "roles")
    made = _role_named(server, "Dev toggler")
    assert made is not None
    assert made["permissions"] == [
        {"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}
    ]

    page.get_by_role("link", name="Edit role Dev toggler").click()
    page.get_by_label("CREATE_FEATURE (project)").check()
    page.get_by_role("button", name="Save role").click()
    expect(page.get_by_role("row", name="Dev toggler")).to_contain_text("CREATE_FEATURE")
    changed = _role_named(server, "Dev toggler")
    assert changed is not None
    assert {p["name"] for p in changed["permissions"]} == {
        "CREATE_FEATURE",
        "UPDATE_FEATURE_ENVIRONMENT",
    }

    # A root role's permissions hold everywhere: one ticked for an environment is refused.
    page.get_by_label("Name", exact=True).fill("Root toggler")
    page.get_by_label("Kind").select_option(label="root role")
    page.get_by_label("CREATE_FEATURE_STRATEGY in production").check()
    page.get_by_role("button", name="Create role").click()
    expect(page.get_by_role("alert")).to_contain_text(
        "CREATE_FEATURE_STRATEGY in production: this permission is not per environment"
    )
    expect(page.get_by_label("Kind")).to_have_value("root-custom")
    expect(page.get_by_label("CREATE_FEATURE_STRATEGY in production")).to_be_checked()
    assert _role_named(server, "Root toggler") is None

    page.goto(server.url + "/ui/roles")
    page.get_by_role("button", name="Delete role Dev toggler").click()
    expect(page.get_by_role("status")).to_have_text("Role “Dev toggler” deleted.")
    assert _role_named(server, "Dev toggler") is None


def test_project_roles_are_given_and_taken_on_the_access_page_and_a_viewer_sees_no_form(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    ann = server.api(
        "POST",
        "/api/admin/user-admin",
        {"email": "ann@x.io", "name": "Ann", "rootRole": 3, "password": PASSWORD},
    )
    bot = server.api(
        "POST", "/api/admin/service-account", {"name": "Bot", "username": "bot", "rootRole": 3}
    )
    page.goto(server.url + "/ui/projects")
    page.get_by_role("link", name="Access to project default").click()
    expect(page.get_by_text("Nobody holds a role in this project")).to_be_visible()
    page.get_by_label("Person or service account").select_option(label="Ann (ann@x.io)")
    page.get_by_label("Project role").select_option(label="Member")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("status")).to_have_text("Access given to “Ann”.")
    page.get_by_label("Person or service account").select_option(label="Bot")
    page.get_by_label("Project role").select_option(label="Owner")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("row", name="Ann")).to_contain_text("Member")
    expect(page.get_by_role("row", name="Bot")).to_contain_text("Owner")
    shot(page, "project-access")
    access = server.api("GET", "/api/admin/projects/default/access")
    assert sorted((u["id"], u["roles"]) for u in access["users"]) == [
        (ann["id"], [5]),
        (bot["id"], [4]),
    ]
    # Someone deleted while the page was open: refused, the choices kept, nothing given.
    gone = server.api("POST", "/api/admin/user-admin", {"email": "gone@x.io", "rootRole": 3})
    page.reload()
    page.get_by_label("Person or service account").select_option(label="gone@x.io")
    page.get_by_label("Project role").select_option(label="Owner")
    server.api("DELETE", f"/api/admin/user-admin/{gone['id']}")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("alert")).to_contain_text(f"no user with id {gone['id']}")
    expect(page.get_by_label("Person or service account")).to_have_value(str(gone["id"]))
    expect(page.get_by_label("Project role")).to_have_value("4")
    page.get_by_role("button", name="Remove access of Bot").click()
    expect(page.get_by_role("status")).to_have_text("“Bot” no longer has access to this project.")
    access = server.api("GET", "/api/admin/projects/default/access")
    assert [u["id"] for u in access["users"]] == [ann["id"]]

    page.context.clear_cookies()
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill("ann@x.io")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    page.goto(server.url + "/ui/projects/default/access")
    expect(page.get_by_role("row", name="Ann")).to_contain_text("Member")
    expect(page.locator("main form")).to_have_count(0)
    page.goto(server.url + "/ui/roles")
    expect(page.get_by_role("row", name="Owner")).to_be_visible()
    expect(page.locator("main form")).to_have_count(0)
