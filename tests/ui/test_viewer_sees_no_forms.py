"""A Viewer sees the environments, a flag's edit page, its dependencies and strategies,
and none of the forms to change them (issue 29); the service would refuse them anyway
(tests/http/test_role_matrix.py)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server
from tests.ui.test_roles_in_forms import _password_sign_in, _person

FEATURES = "/api/admin/projects/default/features"


def test_a_viewer_sees_environments_and_flags_without_a_form_to_change_them(
    page: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "parent"})
    server.api("POST", FEATURES, {"name": "child"})
    server.api("PUT", f"{FEATURES}/child/dependencies", [{"feature": "parent"}])
    server.api("POST", f"{FEATURES}/child/environments/development/strategies", {"name": "default"})
    _person(server, "vi@x.io", 3)
    _password_sign_in(page, server, "vi@x.io")

    page.goto(server.url + "/ui/environments")
    expect(page.get_by_role("row", name="production")).to_be_visible()
    expect(page.locator("main form")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete environment production")).to_have_count(0)
    page.goto(server.url + "/ui/environments/production/delete")
    expect(page.locator("main form")).to_have_count(0)

    page.goto(server.url + "/ui/flags/child")
    expect(page.locator(".dependencies")).to_contain_text("Needs parent on")
    expect(page.get_by_role("link", name="Edit flag")).to_have_count(0)
    expect(page.get_by_role("button", name="Add dependency")).to_have_count(0)
    expect(page.get_by_role("button", name="Remove dependency on parent")).to_have_count(0)
    expect(page.get_by_role("button", name="Copy strategies")).to_have_count(0)
    page.goto(server.url + "/ui/flags/child/edit")
    expect(page.get_by_text("You may read this flag but not change it")).to_be_visible()
    expect(page.locator("main form")).to_have_count(0)
