"""Roles in the UI (issue 28): the forms call the same service, so a person without the
permission is refused there too, the form coming back exactly as typed, nothing written;
a Member acts in their project only."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

PASSWORD = "Correct-Horse-9"


def _person(server: Server, email: str, root_role: int) -> int:
    body = {"email": email, "rootRole": root_role, "password": PASSWORD}
    made: int = server.api("POST", "/api/admin/user-admin", body)["id"]
    return made


def _password_sign_in(page: Page, server: Server, email: str) -> None:
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()


def _new_flag(page: Page, server: Server, project: str, name: str) -> None:
    page.goto(server.url + "/ui/flags/new")
    page.get_by_label("Project").select_option(project)
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("button", name="Create flag").click()


def test_a_flag_refused_in_a_project_comes_back_as_typed_and_nothing_is_made(
    page: Page, server: Server
) -> None:
    # A Viewer is drawn no form at all (test_viewer_sees_no_forms.py); a Member of one
    # project is, and may still pick a project where they are refused.
    server.api("POST", "/api/admin/projects", {"id": "theirs", "name": "Theirs"})
    member = _person(server, "vi@x.io", 3)
    server.api("POST", "/api/admin/projects/theirs/access", {"roles": [5], "users": [member]})
    _password_sign_in(page, server, "vi@x.io")
    events = len(server.api("GET", "/api/admin/events")["events"])
    _new_flag(page, server, "default", "not-allowed")
    expect(page.locator("[role=alert]").first).to_contain_text("CREATE_FEATURE")
    expect(page.get_by_label("Name", exact=True)).to_have_value("not-allowed")
    assert server.api_status("GET", "/api/admin/projects/default/features/not-allowed") == 404
    assert len(server.api("GET", "/api/admin/events")["events"]) == events


def test_a_member_creates_flags_in_their_project_and_not_in_another(
    page: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "theirs", "name": "Theirs"})
    member = _person(server, "me@x.io", 3)
    server.api("POST", "/api/admin/projects/theirs/access", {"roles": [5], "users": [member]})
    _password_sign_in(page, server, "me@x.io")
    _new_flag(page, server, "theirs", "in-theirs")
    expect(page.get_by_role("heading", name="in-theirs")).to_be_visible()
    _new_flag(page, server, "default", "in-default")
    expect(page.locator("[role=alert]").first).to_contain_text("in project 'default'")
    assert server.api_status("GET", "/api/admin/projects/default/features/in-default") == 404
