"""A real SMTP server for tests (aiosmtpd), on 127.0.0.1: it keeps every mail it is
given, and (with ``password``) signs in only that user with that password."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

__all__ = ["MailServer", "mail_server", "unused_port"]


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class MailServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.mails: list[EmailMessage] = []
        self.recipients: list[list[str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.mails.append(parsed)
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"


@contextmanager
def mail_server(user: str | None = None, password: str | None = None) -> Iterator[MailServer]:
    """A server that signs in ``user`` with ``password`` only, when given (over plain
    SMTP: the test server has no certificate, and flagcore allows that only to 127.0.0.1)."""

    def authenticator(
        _server: Any, _session: Any, _envelope: Any, _mechanism: str, data: Any
    ) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            (user or "").encode(),
            (password or "").encode(),
        )
        return AuthResult(success=ok, handled=False)  # the server answers 235 or 535

    kept = MailServer(unused_port())
    options: dict[str, Any] = {}
    if user is not None:
        # AUTH offered without TLS (the test server has no certificate); flagcore signs in
        # whenever it has a user, so a wrong password is refused all the same.
        options = {"authenticator": authenticator, "auth_require_tls": False}
    controller = Controller(kept, hostname="127.0.0.1", port=kept.port, **options)
    controller.start()
    try:
        yield kept
    finally:
        controller.stop()
