"""Signing in with a password (issue 28) in Chromium: the first start's one-time link,
the header naming who is signed in, sessions that end on the server (here and on a
second server over the same SQLite file), and the throttle on failed sign-ins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.ui.conftest import ADMIN, Server, sign_in, start_server, stop_server

PASSWORD = "Correct-Horse-9"


def _first_admin_link(server: Server) -> str:
    assert server.process.stdout is not None
    for _ in range(5):
        line = server.process.stdout.readline()
        if line.startswith("first sign-in as user 'admin'"):
            return line.rsplit(" ", 1)[1].strip()
    raise AssertionError("the first start printed no sign-in link")


def _session_cookie(page: Page) -> dict[str, Any]:
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "flagcore_session"]
    return dict(cookie)


def _password_sign_in(page: Page, url: str, username: str, password: str) -> None:
    page.goto(url + "/ui/sign-in")
    page.get_by_label("Email or username").fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in with password").click()


def test_the_first_admin_signs_in_with_the_printed_link_then_with_the_password(
    page: Page, server: Server, shot: Any
) -> None:
    link = _first_admin_link(server)
    page.goto(link)
    expect(page.get_by_role("heading", name="Set your password")).to_be_visible()
    page.get_by_label("New password").fill("too-weak")
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.locator(".field-error").first).to_contain_text("at least 10 characters")
    page.get_by_label("New password").fill(PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()
    expect(page.locator("header .who")).to_have_text("Admin")

    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    # The link was for one use.
    page.goto(link)
    expect(page.get_by_text("This link is unknown, used or expired.")).to_be_visible()

    _password_sign_in(page, server.url, "admin", "Wrong-Horse-9")
    expect(page.locator(".field-error")).to_have_text("check it")
    expect(page.get_by_label("Email or username")).to_have_value("admin")
    _password_sign_in(page, server.url, "ADMIN", PASSWORD)
    shot(page, "signed-in-as-a-user")
    expect(page.locator("header .who")).to_have_text("Admin")
    page.get_by_role("link", name="New flag").click()
    page.get_by_label("Name", exact=True).fill("by-a-person")
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_role("heading", name="by-a-person")).to_be_visible()
    events = server.api("GET", "/api/admin/events?feature=by-a-person")["events"]
    assert [e["createdBy"] for e in events] == ["user:1:Admin"]


def test_an_old_cookie_no_longer_works_after_sign_out(page: Page, server: Server) -> None:
    sign_in(page, server, ADMIN)
    old = _session_cookie(page)
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    page.context.clear_cookies()
    page.context.add_cookies([old])  # type: ignore[list-item]
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    assert page.request.get(server.url + "/api/admin/projects").status == 401


def test_sign_out_everywhere_ends_the_users_other_browsers(page: Page, server: Server) -> None:
    server.api(
        "POST",
        "/api/admin/user-admin",
        {"email": "ann@example.io", "name": "Ann", "rootRole": 1, "password": PASSWORD},
    )
    other = page.context.browser.new_context()  # type: ignore[union-attr]
    try:
        elsewhere = other.new_page()
        _password_sign_in(elsewhere, server.url, "ann@example.io", PASSWORD)
        expect(elsewhere.locator("header .who")).to_have_text("Ann")
        _password_sign_in(page, server.url, "ann@example.io", PASSWORD)
        page.get_by_role("button", name="Sign out everywhere").click()
        expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
        elsewhere.reload()
        expect(elsewhere.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    finally:
        other.close()


def test_a_session_ended_on_one_server_is_refused_by_the_second_at_its_next_request(
    page: Page, tmp_path: Path
) -> None:
    shared = {"FLAGCORE_DB": str(tmp_path / "shared.db"), "FLAGCORE_UI_SECRET": "s" * 64}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = start_server(tmp_path / "a", env=shared)
    second = start_server(tmp_path / "b", env=shared)
    try:
        created = first.api(
            "POST",
            "/api/admin/user-admin",
            {"email": "ann@example.io", "name": "Ann", "rootRole": 1, "password": PASSWORD},
        )
        _password_sign_in(page, first.url, "ann@example.io", PASSWORD)
        expect(page.locator("header .who")).to_have_text("Ann")
        # Both listen on 127.0.0.1, so the browser sends the same cookie to the second.
        page.goto(second.url + "/ui/flags")
        expect(page.locator("header .who")).to_have_text("Ann")
        first.api("PUT", f"/api/admin/user-admin/{created['id']}", {"disabled": True})
        page.reload()
        expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
        assert page.request.get(second.url + "/api/admin/user").status == 401
    finally:
        stop_server(second)
        stop_server(first)


def test_failed_sign_ins_are_throttled_and_the_page_says_so(page: Page, tmp_path: Path) -> None:
    server = start_server(tmp_path, env={"FLAGCORE_SIGN_IN_FAILURES_PER_ACCOUNT": "2"})
    try:
        for _ in range(2):
            _password_sign_in(page, server.url, "admin", "Wrong-Horse-9")
            expect(page.locator(".field-error")).to_have_text("check it")
        _password_sign_in(page, server.url, "admin", "Wrong-Horse-9")
        expect(page.get_by_text("Too many failed sign-ins")).to_be_visible()
        expect(page.get_by_label("Email or username")).to_have_value("admin")
    finally:
        stop_server(server)


def test_an_admin_invites_a_user_who_sets_a_password_and_an_editor_cannot_manage_users(
    signed_in: Page, server: Server, browser: Browser
) -> None:
    page = signed_in
    page.get_by_role("link", name="Users", exact=True).click()
    page.get_by_label("Email", exact=True).fill("not an email")
    page.get_by_label("Name", exact=True).fill("Ed")
    page.get_by_role("button", name="Invite user").click()
    expect(page.get_by_label("Email", exact=True)).to_have_value("not an email")  # kept as typed
    expect(page.get_by_label("Name", exact=True)).to_have_value("Ed")
    page.get_by_label("Email", exact=True).fill("ed@example.io")
    page.get_by_label("Root role").select_option("Editor")
    page.get_by_role("button", name="Invite user").click()
    link = page.get_by_label("Link", exact=True).input_value()
    assert "/ui/set-password?token=" in link

    other = browser.new_context()
    try:
        ed = other.new_page()
        ed.goto(link)
        ed.get_by_label("New password").fill(PASSWORD)
        ed.get_by_role("button", name="Set password and sign in").click()
        expect(ed.locator("header .who")).to_have_text("Ed")
        ed.goto(server.url + "/ui/users")
        expect(ed.get_by_text("Managing users needs the Admin root role.")).to_be_visible()

        page.goto(server.url + "/ui/users")
        page.get_by_role("button", name="Disable Ed").click()
        expect(page.get_by_role("status")).to_have_text("User “Ed” disabled: their sessions ended.")
        ed.reload()
        expect(ed.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
        page.get_by_role("button", name="Delete Ed").click()
        expect(page.get_by_role("status")).to_have_text("User “Ed” deleted.")
    finally:
        other.close()
    users = server.api("GET", "/api/admin/user-admin")["users"]
    assert [u["username"] for u in users] == ["admin"]
