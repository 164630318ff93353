"""Invitations and resets mailed from the Users page (issue 28), in Chromium, to a real
SMTP server the test starts (aiosmtpd on 127.0.0.1): the page says where the link went,
or why it could not be mailed, and shows the link either way."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.mail_server import mail_server, unused_port
from tests.ui.conftest import Server, sign_in, start_server, stop_server

SMTP_PASSWORD = "smtp-Secret-Word-42"


def _mailing_server(tmp_path: Path, port: int) -> Server:
    return start_server(
        tmp_path,
        env={
            "FLAGCORE_SMTP_HOST": "127.0.0.1",
            "FLAGCORE_SMTP_PORT": str(port),
            "FLAGCORE_SMTP_FROM": "flags@example.com",
            "FLAGCORE_SMTP_STARTTLS": "off",
            "FLAGCORE_SMTP_USER": "flagcore",
            "FLAGCORE_SMTP_PASSWORD": SMTP_PASSWORD,
        },
    )


def test_an_invitation_is_mailed_and_a_reset_that_cannot_be_is_shown_with_its_link(
    page: Page, tmp_path: Path
) -> None:
    with mail_server("flagcore", SMTP_PASSWORD) as smtp:
        server = _mailing_server(tmp_path, smtp.port)
        try:
            sign_in(page, server)
            page.goto(server.url + "/ui/users")
            page.get_by_label("Email", exact=True).fill("ann@x.io")
            page.get_by_label("Name", exact=True).fill("Ann")
            page.get_by_role("button", name="Invite user").click()
            expect(page.get_by_role("status")).to_contain_text("was mailed to ann@x.io")
            link = page.get_by_label("Link", exact=True).input_value()
        finally:
            stop_server(server)
    (mail,) = smtp.mails
    assert link in mail.get_content()
    assert SMTP_PASSWORD not in server.log.read_text()

    # The same database, and a mail server that is gone: the reset is shown, not mailed.
    server = _mailing_server(tmp_path, unused_port())
    try:
        sign_in(page, server)
        page.goto(server.url + "/ui/users")
        page.get_by_role("button", name="Reset link for Ann").click()
        expect(page.get_by_role("status")).to_contain_text("was not mailed: the mail server")
        expect(page.get_by_role("status")).to_contain_text("Send it to them yourself")
        assert "/ui/set-password?token=" in page.get_by_label("Link", exact=True).input_value()
    finally:
        stop_server(server)
    assert SMTP_PASSWORD not in server.log.read_text()
