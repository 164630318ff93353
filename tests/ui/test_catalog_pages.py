"""Issue 29's other pages: every project's flags in one list, frontend and multi-project
tokens, tag types, custom strategy definitions, and the event log's diffs; each form
refused comes back as typed, and a Viewer sees the pages without their forms."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Browser, Page, expect

from tests.ui.conftest import Server

PASSWORD = "Correct-Horse-9"
FLAGS = "/api/admin/projects/{}/features"


def _flag(server: Server, project: str, name: str, **body: object) -> None:
    server.api("POST", FLAGS.format(project), {"name": name, **body})


def test_every_projects_flags_are_listed_filtered_paged_and_switched(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "shop", "name": "Shop"})
    _flag(server, "default", "checkout-redesign", description="new checkout")
    _flag(server, "shop", "cart-badge", type="experiment")
    server.api("POST", "/api/admin/tag-types", {"name": "team"})
    server.api("POST", "/api/admin/features/cart-badge/tags", {"type": "team", "value": "growth"})
    for number in range(100):
        _flag(server, "shop", f"bulk-{number:03}")
    page = signed_in
    page.get_by_role("link", name="All flags").click()
    expect(page.get_by_text("102 flags · page 1 of 2")).to_be_visible()
    expect(page.locator("table.flags tbody tr")).to_have_count(100)  # by name: bulk-* first
    page.get_by_role("link", name="Next page").click()
    row = page.get_by_role("row", name=re.compile("^cart-badge"))
    expect(row).to_contain_text("shop")
    expect(row).to_contain_text("team:growth")
    expect(page.get_by_role("row", name=re.compile("^checkout-redesign"))).to_contain_text(
        "default"
    )

    page.get_by_label("Search name or description").fill("CHECKOUT")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table.flags tbody tr")).to_have_count(1)
    page.get_by_label("Search name or description").fill("")
    page.get_by_label("Project").select_option("shop")
    page.get_by_label("Type").select_option("experiment")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table.flags tbody tr")).to_have_count(1)
    page.get_by_role("switch", name="cart-badge in production").click()
    expect(page.get_by_role("switch", name="cart-badge in production")).to_have_attribute(
        "aria-checked", "true"
    )
    expect(page.get_by_label("Project")).to_have_value("shop")  # back on the same filters
    shot(page, "all-flags")
    flag = server.api("GET", FLAGS.format("shop") + "/cart-badge")
    production = next(e for e in flag["environments"] if e["name"] == "production")
    assert production["enabled"] is True


def test_frontend_and_multi_project_tokens_are_made_and_a_refusal_keeps_the_choices(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    for project in ("web", "app"):
        server.api("POST", "/api/admin/projects", {"id": project, "name": project.title()})
    _flag(server, "web", "banner")
    server.api("POST", FLAGS.format("web") + "/banner/environments/production/on")
    page = signed_in
    page.goto(server.url + "/ui/tokens")
    page.get_by_label("Token name").fill("browser")
    page.get_by_label("Token type").select_option("frontend")
    page.get_by_label("Projects (client and frontend tokens)").select_option([])
    page.get_by_label("Environment (client and frontend tokens)").select_option("production")
    page.get_by_role("button", name="Create token").click()
    # No project chosen: refused, never widened to every project; the form as typed.
    expect(page.get_by_role("alert")).to_contain_text("choose the token's projects")
    expect(page.get_by_label("Token name")).to_have_value("browser")
    expect(page.get_by_label("Token type")).to_have_value("frontend")
    expect(page.get_by_label("Projects (client and frontend tokens)")).to_have_values([])
    expect(page.get_by_label("Environment (client and frontend tokens)")).to_have_value(
        "production"
    )
    page.get_by_label("Projects (client and frontend tokens)").select_option(["web", "app"])
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Secret").input_value()
    assert secret.startswith("[]:production.")
    answer = server.api("GET", "/api/frontend", token=secret)
    assert [t["name"] for t in answer["toggles"]] == ["banner"]
    tokens = server.api("GET", "/api/admin/api-tokens")["tokens"]
    (stored,) = [t for t in tokens if t["tokenName"] == "browser"]
    assert (stored["type"], sorted(stored["projects"])) == ("frontend", ["app", "web"])

    page.goto(server.url + "/ui/tokens")
    page.get_by_label("Token name").fill("two-projects")
    page.get_by_label("Token type").select_option("client")
    page.get_by_label("Projects (client and frontend tokens)").select_option(["web", "app"])
    # The list (the frontend token among them) and the form, for docs/ui.md.
    page.get_by_role("heading", name="New token").evaluate(
        "h => window.scrollTo(0, h.offsetTop - 330)"
    )
    shot(page, "tokens")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Secret").input_value()
    features = server.api("GET", "/api/client/features", token=secret)["features"]
    assert [f["name"] for f in features] == ["banner"]


def test_tag_types_are_created_edited_and_deleted_once_no_flag_carries_them(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    page.get_by_role("link", name="Tag types").click()
    page.get_by_label("Name").fill("not a name")
    page.get_by_label("Description").fill("who owns it")
    page.get_by_role("button", name="Create tag type").click()
    expect(page.get_by_role("alert")).to_contain_text("URL-friendly")
    expect(page.get_by_label("Name")).to_have_value("not a name")
    expect(page.get_by_label("Name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Description")).to_have_value("who owns it")
    page.get_by_label("Name").fill("team")
    page.get_by_role("button", name="Create tag type").click()
    expect(page.get_by_text("Tag type “team” saved.")).to_be_visible()
    found = server.api("GET", "/api/admin/tag-types/team")["tagType"]
    assert found == {"name": "team", "description": "who owns it"}

    page.get_by_role("link", name="team", exact=True).click()
    page.get_by_label("Description").fill("owning team")
    page.get_by_role("button", name="Save tag type").click()
    expect(page.get_by_role("row", name=re.compile("^team "))).to_contain_text("owning team")

    _flag(server, "default", "tagged")
    server.api("POST", "/api/admin/features/tagged/tags", {"type": "team", "value": "core"})
    page.get_by_role("button", name="Delete tag type team").click()
    expect(page.get_by_role("alert")).to_contain_text("tagged: tagged")
    shot(page, "tag-types")
    server.api("DELETE", "/api/admin/features/tagged/tags/team/core")
    page.get_by_role("button", name="Delete tag type team").click()
    expect(page.get_by_text("Tag type “team” deleted.")).to_be_visible()
    assert server.api_status("GET", "/api/admin/tag-types/team") == 404


def test_a_custom_strategy_is_defined_edited_deprecated_and_deleted_when_unused(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    page.get_by_role("link", name="Strategies").click()
    page.get_by_role("link", name="New custom strategy").click()
    page.get_by_label("Name (as SDKs implement it").fill("byPlan")
    page.get_by_label("Title").fill("By plan")
    page.locator("[name=parameters-0-name]").fill("plans")
    page.locator("[name=parameters-0-type]").select_option("list")
    page.locator("[name=parameters-0-required]").check()
    page.get_by_role("button", name="Add a parameter row").click()
    page.locator("[name=parameters-1-description]").fill("a row without a name")
    page.get_by_role("button", name="Save strategy").click()
    # Refused: the nameless row is named, every row comes back as typed.
    expect(page.get_by_role("alert")).to_contain_text("each parameter needs a name")
    expect(page.locator("[name=parameters-1-name]")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("[name=parameters-0-type]")).to_have_value("list")
    expect(page.locator("[name=parameters-0-required]")).to_be_checked()
    expect(page.locator("[name=parameters-1-description]")).to_have_value("a row without a name")
    expect(page.get_by_label("Title")).to_have_value("By plan")
    page.locator("[name=parameters-1-name]").fill("tier")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("Strategy “byPlan” saved.")).to_be_visible()
    stored = server.api("GET", "/api/admin/strategies/byPlan")
    assert stored["title"] == "By plan"
    assert [(p["name"], p["type"], p["required"]) for p in stored["parameters"]] == [
        ("plans", "list", True),
        ("tier", "string", False),
    ]

    page.get_by_role("link", name="By plan").click()
    page.get_by_label("Description").fill("on for the plans listed")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("Strategy “byPlan” saved.")).to_be_visible()
    assert server.api("GET", "/api/admin/strategies/byPlan")["description"] == (
        "on for the plans listed"
    )

    _flag(server, "default", "paid")
    editor = server.url + "/ui/flags/paid/environments/production/strategies/new"
    choices = page.get_by_label("Strategy type").locator("option")
    page.get_by_role("button", name="Deprecate strategy byPlan").click()
    expect(page.get_by_role("row", name=re.compile("By plan"))).to_contain_text("deprecated")
    assert server.api("GET", "/api/admin/strategies/byPlan")["deprecated"] is True
    page.goto(editor)  # a deprecated strategy is no longer offered to new strategies
    expect(choices.filter(has_text="byPlan")).to_have_count(0)
    page.goto(server.url + "/ui/strategies")
    page.get_by_role("button", name="Reactivate strategy byPlan").click()
    assert server.api("GET", "/api/admin/strategies/byPlan")["deprecated"] is False
    page.goto(editor)
    expect(choices.filter(has_text="byPlan")).to_have_count(1)
    page.goto(server.url + "/ui/strategies")

    server.api(
        "POST",
        FLAGS.format("default") + "/paid/environments/production/strategies",
        {"name": "byPlan", "parameters": {"plans": "pro", "tier": "1"}},
    )
    page.get_by_role("button", name="Delete strategy byPlan").click()
    expect(page.get_by_role("alert")).to_contain_text('flag "paid" in environment "production"')
    shot(page, "strategies")
    page.goto(server.url + "/ui/strategies/flexibleRollout")  # built-ins are read only
    expect(page.get_by_text("A built-in strategy: it cannot be changed.")).to_be_visible()
    expect(page.get_by_role("button", name="Save strategy")).to_have_count(0)

    server.api("DELETE", FLAGS.format("default") + "/paid")
    server.api("DELETE", "/api/admin/archive/paid")
    page.goto(server.url + "/ui/strategies")
    page.get_by_role("button", name="Delete strategy byPlan").click()
    expect(page.get_by_text("Strategy “byPlan” deleted.")).to_be_visible()
    assert server.api_status("GET", "/api/admin/strategies/byPlan") == 404


def test_the_event_log_shows_what_an_event_changed_before_and_after_as_text(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    _flag(server, "default", "diffed", description="old words")
    path = FLAGS.format("default") + "/diffed"
    server.api("PUT", path, {"description": "<script>alert(1)</script>", "type": "experiment"})
    page = signed_in
    page.goto(server.url + "/ui/events?flag=diffed")
    row = page.get_by_role("row", name=re.compile("feature-metadata-updated|feature-updated"))
    row.get_by_text(re.compile(r"^\d+ changes?$")).click()
    description = row.locator("li", has_text="description")
    expect(description.locator("del")).to_have_text('"old words"')
    expect(description.locator("ins")).to_have_text('"<script>alert(1)</script>"')
    expect(row.locator("li", has_text="type").locator("ins")).to_have_text('"experiment"')
    expect(row.locator("li", has_text="name")).to_have_count(0)  # unchanged: not listed
    shot(page, "event-diff")
    assert page.dialogs == []  # type: ignore[attr-defined]


def _viewer_signs_in(page: Page, server: Server) -> None:
    body = {"email": "vi@x.io", "rootRole": 3, "password": PASSWORD}
    server.api("POST", "/api/admin/user-admin", body)
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill("vi@x.io")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()


def test_a_viewer_sees_these_pages_and_none_of_their_forms(page: Page, server: Server) -> None:
    server.api("POST", "/api/admin/tag-types", {"name": "team"})
    server.api("POST", "/api/admin/strategies", {"name": "byPlan"})
    role = {"name": "Dev switcher", "type": "custom", "permissions": []}
    role_id = server.api("POST", "/api/admin/roles", role)["id"]
    _flag(server, "default", "seen")
    _viewer_signs_in(page, server)
    for path, seen in (
        ("/ui/search", "seen"),
        ("/ui/tag-types", "team"),
        ("/ui/tag-types/team", "Edit tag type team"),
        ("/ui/strategies", "byPlan"),
        ("/ui/strategies/byPlan", "Strategy byPlan"),
        ("/ui/tokens", "API tokens"),
        ("/ui/roles", "Roles"),
        (f"/ui/roles/{role_id}", "Role Dev switcher"),
        ("/ui/projects/default/access", "Access to project default"),
    ):
        page.goto(server.url + path)
        expect(page.locator("main")).to_contain_text(seen)
        expect(page.locator("main form[method=post]")).to_have_count(0)


def test_a_flags_tags_are_added_and_removed_on_its_page(signed_in: Page, server: Server) -> None:
    server.api("POST", "/api/admin/tag-types", {"name": "team"})
    _flag(server, "default", "tagged")
    page = signed_in
    page.goto(server.url + "/ui/flags/tagged")
    page.get_by_label("Tag type").select_option("team")
    page.get_by_label("Tag value").fill("x")  # too short: refused, kept as typed
    page.get_by_role("button", name="Add tag").click()
    expect(page.get_by_label("Tag value")).to_have_value("x")
    expect(page.get_by_label("Tag type")).to_have_value("team")
    page.get_by_label("Tag value").fill("growth")
    page.get_by_role("button", name="Add tag").click()
    expect(page.get_by_role("button", name="Remove tag team:growth")).to_be_visible()
    tags = server.api("GET", "/api/admin/features/tagged/tags")["tags"]
    assert tags == [{"type": "team", "value": "growth"}]
    page.get_by_role("button", name="Remove tag team:growth").click()
    expect(page.get_by_text("No tags.")).to_be_visible()
    assert server.api("GET", "/api/admin/features/tagged/tags")["tags"] == []


def test_an_admin_sends_a_reset_link_and_ends_a_users_sessions(
    signed_in: Page, server: Server, browser: Browser
) -> None:
    body = {"email": "ed@x.io", "name": "Ed", "rootRole": 2, "password": PASSWORD}
    server.api("POST", "/api/admin/user-admin", body)
    admin = signed_in
    ed = browser.new_context().new_page()
    try:
        ed.goto(server.url + "/ui/sign-in")
        ed.get_by_label("Email or username").fill("ed@x.io")
        ed.get_by_label("Password", exact=True).fill(PASSWORD)
        ed.get_by_role("button", name="Sign in with password").click()
        expect(ed.locator("header .who")).to_have_text("Ed")

        admin.goto(server.url + "/ui/users")
        admin.get_by_role("button", name="End sessions of Ed").click()
        expect(admin.get_by_role("status")).to_contain_text("Every session of “Ed” ended.")
        ed.reload()
        expect(ed.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()

        admin.get_by_role("button", name="Reset link for Ed").click()
        link = admin.get_by_label("Link", exact=True).input_value()
        assert "/ui/set-password?token=" in link
        ed.goto(link)
        ed.get_by_label("New password").fill("Another-Horse-7")
        ed.get_by_role("button", name="Set password and sign in").click()
        expect(ed.locator("header .who")).to_have_text("Ed")
    finally:
        ed.context.close()


def test_an_action_set_is_switched_off_and_on_and_deleted_then_its_endpoint(
    signed_in: Page, server: Server
) -> None:
    _flag(server, "default", "search")
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "alerts"})
    action = {
        "action": "TOGGLE_FEATURE_OFF",
        "sortOrder": 1,
        "executionParams": {"featureName": "search", "environment": "production"},
    }
    created = server.api(
        "POST",
        "/api/admin/projects/default/actions",
        {
            "name": "on alert",
            "enabled": True,
            "match": {"source": "signal-endpoint", "sourceId": endpoint["id"], "payload": {}},
            "actions": [action],
        },
    )
    one = f"/api/admin/projects/default/actions/{created['id']}"
    page = signed_in
    page.goto(server.url + "/ui/actions?project=default")
    page.get_by_role("link", name="on alert", exact=True).click()
    page.get_by_label("Enabled").uncheck()
    page.get_by_role("button", name="Save action set").click()
    expect(page.get_by_text("Action set “on alert” saved.")).to_be_visible()
    assert server.api("GET", one)["enabled"] is False
    page.get_by_role("link", name="on alert", exact=True).click()
    page.get_by_label("Enabled").check()
    page.get_by_role("button", name="Save action set").click()
    assert server.api("GET", one)["enabled"] is True

    page.get_by_role("link", name="on alert", exact=True).click()
    page.get_by_role("button", name="Delete action set").click()
    expect(page.get_by_text("Action set “on alert” deleted.")).to_be_visible()
    assert server.api_status("GET", one) == 404

    page.goto(server.url + "/ui/signals")
    page.get_by_role("link", name="alerts").click()
    page.get_by_role("button", name="Delete signal endpoint alerts").click()
    expect(page.get_by_text("Signal endpoint “alerts” deleted")).to_be_visible()
    assert server.api_status("GET", f"/api/admin/signal-endpoints/{endpoint['id']}") == 404


def test_a_service_account_is_renamed_and_given_another_role_a_refusal_kept_as_typed(
    signed_in: Page, server: Server
) -> None:
    for name, username in (("Deployer", "deployer"), ("Other", "other-bot")):
        body = {"name": name, "username": username, "rootRole": "Viewer"}
        server.api("POST", "/api/admin/service-account", body)
    page = signed_in
    page.get_by_role("link", name="Service accounts").click()
    page.get_by_label("User name of Deployer").fill("OTHER-BOT")  # taken, in another case
    page.get_by_label("Display name of Deployer").fill("Deployer two")
    page.get_by_label("Role of Deployer").select_option("Editor")
    page.get_by_role("button", name="Save Deployer").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_label("User name of Deployer")).to_have_value("OTHER-BOT")
    expect(page.get_by_label("User name of Deployer")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Display name of Deployer")).to_have_value("Deployer two")
    expect(page.get_by_label("Role of Deployer")).to_have_value("Editor")
    page.get_by_label("User name of Deployer").fill("deployer")
    page.get_by_role("button", name="Save Deployer").click()
    expect(page.get_by_text("Service account “Deployer two” saved.")).to_be_visible()
    accounts = server.api("GET", "/api/admin/service-account")["serviceAccounts"]
    (saved,) = [a for a in accounts if a["username"] == "deployer"]
    assert (saved["name"], saved["rootRole"]) == ("Deployer two", 2)


def test_a_custom_role_is_made_given_in_a_project_changed_taken_and_deleted(
    signed_in: Page, server: Server
) -> None:
    body = {"email": "mo@x.io", "name": "Mo", "rootRole": 3, "password": PASSWORD}
    mo = server.api("POST", "/api/admin/user-admin", body)["id"]
    page = signed_in
    page.get_by_role("link", name="Roles", exact=True).click()
    page.get_by_label("Name", exact=True).fill("Flag flipper")
    page.get_by_label("Kind").select_option(label="project role")
    page.get_by_label("UPDATE_FEATURE_ENVIRONMENT (project)").check()
    page.get_by_label("CREATE_SEGMENT", exact=True).check()  # not a project permission
    page.get_by_role("button", name="Create role").click()
    expect(page.get_by_role("alert")).to_contain_text("CREATE_SEGMENT")
    expect(page.get_by_label("Name", exact=True)).to_have_value("Flag flipper")
    expect(page.get_by_label("Kind")).to_have_value("custom")
    expect(page.get_by_label("UPDATE_FEATURE_ENVIRONMENT (project)")).to_be_checked()
    expect(page.get_by_label("CREATE_SEGMENT", exact=True)).to_be_checked()
    assert [r["name"] for r in server.api("GET", "/api/admin/roles")["roles"]].count(
        "Flag flipper"
    ) == 0
    page.get_by_label("CREATE_SEGMENT", exact=True).uncheck()
    page.get_by_role("button", name="Create role").click()
    expect(page.get_by_text("Role “Flag flipper” saved.")).to_be_visible()
    (role,) = [
        r for r in server.api("GET", "/api/admin/roles")["roles"] if r["name"] == "Flag flipper"
    ]
    stored = server.api("GET", f"/api/admin/roles/{role['id']}")
    assert [p["name"] for p in stored["permissions"]] == ["UPDATE_FEATURE_ENVIRONMENT"]

    page.get_by_role("link", name="Edit role Flag flipper").click()
    page.get_by_label("Description").fill("switches flags")
    page.get_by_role("button", name="Save role").click()
    expect(page.get_by_text("Role “Flag flipper” saved.")).to_be_visible()
    assert server.api("GET", f"/api/admin/roles/{role['id']}")["description"] == "switches flags"

    page.get_by_role("link", name="Projects", exact=True).click()
    page.get_by_role("link", name="Access to project default").click()
    page.get_by_label("Person, service account or group").select_option(label="Mo (mo@x.io)")
    page.get_by_role("button", name="Give role").click()  # no role chosen: refused
    expect(page.get_by_role("alert")).to_contain_text("Choose a role")
    expect(page.get_by_label("Person, service account or group")).to_have_value(str(mo))
    assert server.api("GET", "/api/admin/projects/default/access")["users"] == []
    page.get_by_label("Project role").select_option(label="Flag flipper")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_text("Access given to “Mo”.")).to_be_visible()
    access = server.api("GET", "/api/admin/projects/default/access")
    assert [(u["id"], u["roles"]) for u in access["users"]] == [(mo, [role["id"]])]
    page.get_by_label("Person, service account or group").select_option(label="Mo (mo@x.io)")
    page.get_by_label("Project role").select_option(label="Member")
    page.get_by_role("button", name="Give role").click()
    expect(page.get_by_role("row", name="Mo (mo@x.io)").get_by_label("Member")).to_be_checked()
    access = server.api("GET", "/api/admin/projects/default/access")
    assert [(u["id"], sorted(u["roles"])) for u in access["users"]] == [
        (mo, sorted([role["id"], 5]))
    ]
    page.get_by_role("button", name="Remove access of Mo").click()
    expect(page.get_by_text("“Mo” no longer has access to this project.")).to_be_visible()
    expect(page.get_by_text("Nobody holds a role in this project")).to_be_visible()
    assert server.api("GET", "/api/admin/projects/default/access")["users"] == []

    page.goto(server.url + "/ui/roles")
    page.get_by_role("button", name="Delete role Flag flipper").click()
    expect(page.get_by_text("Role “Flag flipper” deleted.")).to_be_visible()
    assert server.api_status("GET", f"/api/admin/roles/{role['id']}") == 404


def test_editing_a_role_keeps_its_per_environment_grants(signed_in: Page, server: Server) -> None:
    grant = {"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}
    body = {"name": "Dev switcher", "type": "custom", "permissions": [grant]}
    made = server.api("POST", "/api/admin/roles", body)
    page = signed_in
    page.goto(server.url + f"/ui/roles/{made['id']}")
    expect(page.get_by_label("UPDATE_FEATURE_ENVIRONMENT in development")).to_be_checked()
    page.get_by_label("Description").fill("development only")
    page.get_by_role("button", name="Save role").click()
    expect(page.get_by_text("Role “Dev switcher” saved.")).to_be_visible()
    stored = server.api("GET", f"/api/admin/roles/{made['id']}")
    assert stored["permissions"] == [grant]
