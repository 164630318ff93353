"""The Roles, Groups and Access pages and a person's own page (issue 28) in Chromium:
custom roles made, refused as typed, changed and deleted; groups made, their members
changed, given project roles and deleted; project roles given to a person, a service
account and a group, changed in place and taken away; a Viewer reads these pages and finds
no form; a person changes their name and password and signs out everywhere."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server, sign_in
from tests.ui.test_accessibility import _UNLABELLED

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
    page.get_by_label("Person, service account or group").select_option(label="Ann (ann@x.io)")
    page.get_by_label("Project role").select_option(label="Member")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("status")).to_have_text("Access given to “Ann”.")
    page.get_by_label("Person, service account or group").select_option(label="Bot")
    page.get_by_label("Project role").select_option(label="Owner")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("row", name="Ann").get_by_label("Member")).to_be_checked()
    expect(page.get_by_role("row", name="Bot").get_by_label("Owner")).to_be_checked()
    shot(page, "project-access")
    access = server.api("GET", "/api/admin/projects/default/access")
    assert sorted((u["id"], u["roles"]) for u in access["users"]) == [
        (ann["id"], [5]),
        (bot["id"], [4]),
    ]
    # Bot's roles changed in place: Member ticked, Owner unticked, saved in one step.
    row = page.get_by_role("row", name="Bot")
    row.get_by_label("Member").check()
    row.get_by_label("Owner").uncheck()
    row.get_by_role("button", name="Save roles of Bot").click()
    expect(page.get_by_role("status")).to_have_text("Project roles of “Bot” changed.")
    access = server.api("GET", "/api/admin/projects/default/access")
    assert [u["roles"] for u in access["users"] if u["id"] == bot["id"]] == [[5]]
    # A role deleted while the page was open: refused by his row, the ticks kept.
    helper = server.api("POST", "/api/admin/roles", {"name": "Helper", "type": "custom"})
    page.reload()
    page.get_by_role("row", name="Bot").get_by_label("Helper").check()
    server.api("DELETE", f"/api/admin/roles/{helper['id']}")
    page.get_by_role("button", name="Save roles of Bot").click()
    row = page.get_by_role("row", name="Bot")
    expect(row.get_by_role("alert")).to_contain_text(f"no project role with id {helper['id']}")
    expect(row.get_by_label(f"role {helper['id']}")).to_be_checked()
    expect(row.get_by_label("Member")).to_be_checked()
    access = server.api("GET", "/api/admin/projects/default/access")
    assert [u["roles"] for u in access["users"] if u["id"] == bot["id"]] == [[5]]
    page.goto(server.url + "/ui/projects/default/access")
    # Someone deleted while the page was open: refused, the choices kept, nothing given.
    gone = server.api("POST", "/api/admin/user-admin", {"email": "gone@x.io", "rootRole": 3})
    page.reload()
    page.get_by_label("Person, service account or group").select_option(label="gone@x.io")
    page.get_by_label("Project role").select_option(label="Owner")
    server.api("DELETE", f"/api/admin/user-admin/{gone['id']}")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("alert")).to_contain_text(f"no user with id {gone['id']}")
    expect(page.get_by_label("Person, service account or group")).to_have_value(str(gone["id"]))
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

    # Her own page: her roles, her name changed, her password changed with the current one.
    page.get_by_role("link", name="Your account").click()
    expect(page.locator("main")).to_contain_text("Member in default")
    assert page.evaluate(_UNLABELLED) == []
    page.get_by_label("Name", exact=True).fill("Ann Lee")
    page.get_by_role("button", name="Save name").click()
    expect(page.get_by_role("status")).to_have_text("Your name is saved.")
    expect(page.locator("header .who")).to_have_text("Ann Lee")
    page.get_by_label("Current password").fill("Not-Her-Password-1")
    page.get_by_label("New password", exact=True).fill("Battery-Staple-7")
    page.get_by_label("New password again").fill("Battery-Staple-7")
    page.get_by_role("button", name="Change password").click()
    expect(page.locator(".field-error")).to_have_text("not right")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill("Battery-Staple-7")
    page.get_by_label("New password again").fill("Battery-Staple-7")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("status")).to_have_text("Your new password is saved.")
    login = {"username": "ann@x.io", "password": "Battery-Staple-7"}
    assert page.request.post(server.url + "/auth/simple/login", data=login).status == 200
    # That sign-in is a second session; both are listed, and one click ends them all.
    page.reload()
    expect(page.get_by_role("cell", name="another browser")).to_have_count(1)
    expect(page.get_by_role("cell", name="this browser")).to_have_count(1)
    page.get_by_role("button", name="Sign out everywhere").last.click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    assert server.api("GET", f"/api/admin/user-admin/{ann['id']}")["name"] == "Ann Lee"


def test_an_admin_makes_a_group_changes_its_members_gives_it_a_project_role_and_deletes_it(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    for email, name in (("ann@x.io", "Ann"), ("bob@x.io", "Bob")):
        body = {"email": email, "name": name, "rootRole": 3, "password": PASSWORD}
        server.api("POST", "/api/admin/user-admin", body)
    page.get_by_role("link", name="Groups", exact=True).click()
    expect(page.get_by_text("No groups yet.")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Platform")
    page.get_by_label("Description").fill("the platform team")
    page.get_by_label("Provider groups").fill("platform-devs\nsre")
    page.get_by_label("Ann").check()
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("status")).to_have_text("Group “Platform” saved.")
    expect(page.get_by_role("row", name="Platform")).to_contain_text("Ann")
    (made,) = server.api("GET", "/api/admin/groups")["groups"]
    assert made["mappingsSSO"] == ["platform-devs", "sre"]
    assert [u["user"]["email"] for u in made["users"]] == ["ann@x.io"]

    # A second group of the same name (whatever its case): refused, the form as typed.
    page.get_by_label("Name", exact=True).fill("platform")
    page.get_by_label("Root role").select_option(label="Editor")
    page.get_by_label("Bob").check()
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("alert")).to_contain_text('a group named "platform" already exists')
    expect(page.get_by_label("Name", exact=True)).to_have_value("platform")
    expect(page.get_by_label("Root role")).to_have_value("2")
    expect(page.get_by_label("Bob")).to_be_checked()
    assert len(server.api("GET", "/api/admin/groups")["groups"]) == 1

    # Its members changed on its own page: Bob in, Ann out, Editor as its root role.
    page.goto(server.url + "/ui/groups")
    page.get_by_role("link", name="Platform").click()
    page.get_by_label("Bob").check()
    page.get_by_label("Ann").uncheck()
    page.get_by_label("Root role").select_option(label="Editor")
    page.get_by_role("button", name="Save group").click()
    expect(page.get_by_role("row", name="Platform")).to_contain_text("Bob")
    shot(page, "groups")
    group = server.api("GET", f"/api/admin/groups/{made['id']}")
    assert ([u["user"]["email"] for u in group["users"]], group["rootRole"]) == (["bob@x.io"], 2)

    # Given Owner in default on the Access page, changed to Member in place, taken away.
    page.goto(server.url + "/ui/projects/default/access")
    page.get_by_label("Person, service account or group").select_option(label="Group Platform")
    page.get_by_label("Project role").select_option(label="Owner")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("status")).to_have_text("Access given to “Platform”.")
    row = page.get_by_role("row", name="Platform")
    expect(row).to_contain_text("group of 1")
    row.get_by_label("Member").check()
    row.get_by_label("Owner").uncheck()
    row.get_by_role("button", name="Save roles of group Platform").click()
    expect(page.get_by_role("status")).to_have_text("Project roles of “Platform” changed.")
    assert [
        g["roles"] for g in server.api("GET", "/api/admin/projects/default/access")["groups"]
    ] == [[5]]

    # Bob, a Viewer in the group, reads the Groups page without a form.
    page.context.clear_cookies()
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill("bob@x.io")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    page.get_by_role("link", name="Groups", exact=True).click()
    expect(page.get_by_role("row", name="Platform")).to_contain_text("Editor")
    expect(page.locator("main form")).to_have_count(0)
    page.get_by_role("link", name="Platform").click()
    expect(page.locator("main")).to_contain_text("Bob")
    expect(page.locator("main form")).to_have_count(0)

    page.context.clear_cookies()
    sign_in(page, server)
    page.goto(server.url + "/ui/projects/default/access")
    page.get_by_role("button", name="Remove access of group Platform").click()
    expect(page.get_by_role("status")).to_have_text(
        "“Platform” no longer has access to this project."
    )
    page.goto(server.url + "/ui/groups")
    page.get_by_role("button", name="Delete group Platform").click()
    expect(page.get_by_role("status")).to_have_text("Group “Platform” deleted.")
    assert server.api("GET", "/api/admin/groups")["groups"] == []
