"""Invitation and password-reset mails over SMTP (issue 28), when a mail server is
configured (``FLAGCORE_SMTP_*``); without one nothing is sent and the links are shown to
the admin only, as before.

A mail is sent off the event loop, on a small pool of its own (never the store's worker,
whose queue SDK polls share), within `SEND_TIMEOUT_SECONDS` in all. A failure is told to
the admin who made the link (who still sees the link, to pass it on another way) and
logged with the mail server's reason only: no log line or message holds the SMTP
password or the link's secret.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
import ssl
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage

import attrs
from aiohttp import web

from flagcore.people import LinkKind, User
from flagcore_http.config import ServerConfig
from flagcore_http.keys import CONFIG

__all__ = ["SEND_TIMEOUT_SECONDS", "MailResult", "mail_link"]

SEND_TIMEOUT_SECONDS = 15.0
"""How long one mail may take, connecting included; each step of the conversation gets
it too (smtplib's socket timeout), so a server that stops answering frees the thread."""
_MAX_REASON = 200

_log = logging.getLogger("flagcore_http.mail")
_MAIL_WORK = ThreadPoolExecutor(max_workers=2, thread_name_prefix="flagcore-mail")

_SUBJECTS = {
    LinkKind.INVITATION: "You are invited to flagcore",
    LinkKind.RESET: "Reset your flagcore password",
}
_OPENINGS = {
    LinkKind.INVITATION: "You have been invited to flagcore. Choose your password here",
    LinkKind.RESET: "A reset of your flagcore password was asked for. Choose a new one here",
}


@attrs.frozen
class MailResult:
    """What became of a link's mail: sent to ``sent_to``, or not, for ``problem``."""

    sent_to: str | None = None
    problem: str | None = None

    @property
    def sent(self) -> bool:
        return self.sent_to is not None


async def mail_link(
    request: web.Request, user: User, link: str, kind: LinkKind
) -> MailResult | None:
    """Mail ``link`` to ``user``; None when no mail server is configured."""
    config = request.app[CONFIG]
    if config.smtp_host is None:
        return None
    if not user.email:
        return MailResult(problem="they have no email address")
    message = _message(config, user.email, user.display_name, link, kind)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(SEND_TIMEOUT_SECONDS):
            await loop.run_in_executor(_MAIL_WORK, _send, config, message)
    except (OSError, smtplib.SMTPException, TimeoutError) as error:
        reason = _reason(error, config)
        _log.warning("the %s mail to user %s was not sent: %s", kind.value, user.id, reason)
        return MailResult(problem=f"the mail server could not take it ({reason})")
    return MailResult(sent_to=user.email)


def _message(config: ServerConfig, to: str, name: str, link: str, kind: LinkKind) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = _SUBJECTS[kind]
    message["From"] = config.smtp_from
    message["To"] = to
    message.set_content(
        f"Hello {name},\n\n{_OPENINGS[kind]} (the link works once, for 24 hours):\n\n"
        f"{link}\n\nIf you did not expect this mail, ignore it: nothing changes.\n"
    )
    return message


def _send(config: ServerConfig, message: EmailMessage) -> None:
    assert config.smtp_host is not None
    with smtplib.SMTP(config.smtp_host, config.smtp_port, timeout=SEND_TIMEOUT_SECONDS) as smtp:
        if config.smtp_starttls:
            smtp.starttls(context=ssl.create_default_context())
        if config.smtp_user and config.smtp_password:
            smtp.login(config.smtp_user, config.smtp_password)
        smtp.send_message(message)


def _reason(error: BaseException, config: ServerConfig) -> str:
    """The server's answer or the network's error, short, never holding the password."""
    if isinstance(error, smtplib.SMTPResponseException):
        said = error.smtp_error
        text = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        reason = f"{error.smtp_code} {text}"
    elif isinstance(error, TimeoutError):
        reason = f"no answer within {SEND_TIMEOUT_SECONDS:g} s"
    else:
        reason = str(error) or type(error).__name__
    if config.smtp_password:
        reason = reason.replace(config.smtp_password, "…")
    reason = " ".join(reason.split())
    return reason if len(reason) <= _MAX_REASON else reason[:_MAX_REASON] + "…"
