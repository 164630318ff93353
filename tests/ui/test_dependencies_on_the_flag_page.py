"""A flag's dependencies on its page: listed, added (parent, on or off, variants), removed."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FEATURES = "/api/admin/projects/default/features"


def _flags(server: Server, *names: str) -> None:
    for name in names:
        server.api("POST", FEATURES, {"name": name})


def test_a_parent_is_added_with_variants_shown_and_removed(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    _flags(server, "parent", "other", "child")
    page = signed_in
    page.goto(server.url + "/ui/flags/child")
    expect(page.get_by_text("No dependencies.")).to_be_visible()
    page.get_by_label("Parent flag").select_option("parent")
    page.get_by_label("With one of its variants").fill("blue\ngreen")
    page.get_by_role("button", name="Add dependency").click()
    expect(page.get_by_text("Dependencies of “child” saved.")).to_be_visible()
    expect(page.locator(".dependencies li").first).to_contain_text(
        "Needs parent on, with variant blue or green"
    )
    page.get_by_label("Parent flag").select_option("other")
    page.get_by_label("Parent must be").select_option("off")
    page.get_by_role("button", name="Add dependency").click()
    expect(page.locator(".dependencies li")).to_have_count(2)
    page.locator("#deps-h").evaluate("heading => heading.scrollIntoView()")
    shot(page, "flag-dependencies")
    stored = server.api("GET", f"{FEATURES}/child")["dependencies"]
    assert stored == [
        {"feature": "parent", "enabled": True, "variants": ["blue", "green"]},
        {"feature": "other", "enabled": False, "variants": []},
    ]

    page.get_by_role("button", name="Remove dependency on parent").click()
    expect(page.locator(".dependencies li")).to_have_count(1)
    assert server.api("GET", f"{FEATURES}/child")["dependencies"] == [
        {"feature": "other", "enabled": False, "variants": []}
    ]
    page.get_by_role("link", name="other").click()
    expect(page.get_by_role("heading", name="other")).to_be_visible()


def test_a_refused_dependency_comes_back_as_typed_and_nothing_changes(
    signed_in: Page, server: Server
) -> None:
    _flags(server, "grandparent", "parent", "child")
    server.api("PUT", f"{FEATURES}/parent/dependencies", [{"feature": "grandparent"}])
    page = signed_in
    page.goto(server.url + "/ui/flags/child")
    page.get_by_label("Parent flag").select_option("parent")
    page.get_by_label("Parent must be").select_option("off")
    page.get_by_label("With one of its variants").fill("typed")
    page.get_by_role("button", name="Add dependency").click()
    expect(page.get_by_role("alert")).to_contain_text("dependencies are one level deep")
    parent = page.get_by_label("Parent flag")
    expect(parent).to_have_value("parent")
    expect(parent).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Parent must be")).to_have_value("off")
    expect(page.get_by_label("With one of its variants")).to_have_value("typed")
    assert server.api("GET", f"{FEATURES}/child").get("dependencies", []) == []


def test_in_a_project_of_hundreds_of_flags_the_parent_is_typed_by_name(
    signed_in: Page, server: Server
) -> None:
    _flags(server, *(f"flag-{n:03d}" for n in range(302)))
    page = signed_in
    page.goto(server.url + "/ui/flags/flag-000")
    page.get_by_label("Parent flag (its name)").fill("flag-301")
    page.get_by_role("button", name="Add dependency").click()
    expect(page.get_by_text("Dependencies of “flag-000” saved.")).to_be_visible()
    assert server.api("GET", f"{FEATURES}/flag-000")["dependencies"][0]["feature"] == "flag-301"
    page.get_by_label("Parent flag (its name)").fill("no-such-flag")
    page.get_by_role("button", name="Add dependency").click()
    expect(page.get_by_role("alert")).to_contain_text("is not an active flag")
    expect(page.get_by_label("Parent flag (its name)")).to_have_value("no-such-flag")
