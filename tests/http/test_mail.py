"""Invitations and resets mailed over SMTP (issue 28) to a real SMTP server the test
starts (aiosmtpd on 127.0.0.1); a failure is told to the admin with the link still
given; the SMTP password is never logged; no mail server: nothing is sent, as before."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.config import ConfigError
from tests.http.conftest import Api
from tests.mail_server import mail_server, unused_port

SMTP_PASSWORD = "smtp-Secret-Word-42"
Serve = Callable[..., Any]


@pytest.fixture
async def serve(service: Service) -> AsyncIterator[Serve]:
    clients: list[TestClient[Any, Any]] = []

    async def started(**settings: Any) -> Api:
        config = ServerConfig(smtp_from="flags@example.com", smtp_starttls=False, **settings)
        client: TestClient[Any, Any] = TestClient(
            TestServer(create_app(service, config), host="127.0.0.1")
        )
        await client.start_server()
        clients.append(client)
        return Api(client)

    yield started
    for client in clients:
        await client.close()


async def test_an_invitation_asked_to_be_mailed_arrives_with_its_link(serve: Serve) -> None:
    with mail_server("flagcore", SMTP_PASSWORD) as smtp:
        api = await serve(
            smtp_host="127.0.0.1",
            smtp_port=smtp.port,
            smtp_user="flagcore",
            smtp_password=SMTP_PASSWORD,
            public_url="https://flags.example.com",
        )
        body = {"email": "ann@x.io", "name": "Ann", "rootRole": 3, "sendEmail": True}
        made = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    assert made["emailSent"] is True
    (mail,) = smtp.mails
    assert (mail["To"], mail["From"], smtp.recipients) == (
        "ann@x.io",
        "flags@example.com",
        [["ann@x.io"]],
    )
    assert mail["Subject"] == "You are invited to flagcore"
    assert made["inviteLink"] in mail.get_content()
    assert made["inviteLink"].startswith("https://flags.example.com/ui/set-password?token=")


async def test_a_reset_is_mailed_and_its_link_still_answered(serve: Serve) -> None:
    with mail_server() as smtp:
        api = await serve(smtp_host="127.0.0.1", smtp_port=smtp.port)
        await api.json(
            "POST", "/api/admin/user-admin", status=201, json={"email": "ann@x.io", "rootRole": 3}
        )
        assert smtp.mails == []  # Unleash mails an invitation only when sendEmail says so
        reset = await api.json(
            "POST", "/api/admin/user-admin/reset-password", json={"id": "ann@x.io"}
        )
    assert reset["emailSent"] is True
    (mail,) = smtp.mails
    assert mail["Subject"] == "Reset your flagcore password"
    assert reset["resetPasswordUrl"] in mail.get_content()


async def test_a_mail_server_that_cannot_be_reached_is_told_and_the_link_still_works(
    serve: Serve,
) -> None:
    api = await serve(smtp_host="127.0.0.1", smtp_port=unused_port())
    body = {"email": "ann@x.io", "rootRole": 3, "sendEmail": True}
    made = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    assert made["emailSent"] is False
    assert "/ui/set-password?token=" in made["inviteLink"]
    path = made["inviteLink"].split("://", 1)[1].split("/", 1)[1]
    page = await api.client.get("/" + path)
    assert page.status == 200
    assert "Set your password" in await page.text()


async def test_a_refused_smtp_sign_in_logs_the_reason_never_the_password(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with mail_server("flagcore", "another-password") as smtp:
        api = await serve(
            smtp_host="127.0.0.1",
            smtp_port=smtp.port,
            smtp_user="flagcore",
            smtp_password=SMTP_PASSWORD,
        )
        body = {"email": "ann@x.io", "rootRole": 3, "sendEmail": True}
        made = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    assert made["emailSent"] is False
    assert smtp.mails == []
    assert "was not sent: 535" in caplog.text
    assert SMTP_PASSWORD not in caplog.text
    assert made["inviteLink"].split("token=")[1] not in caplog.text


async def test_without_a_mail_server_nothing_is_sent_and_answers_are_as_before(
    service: Service,
) -> None:
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        api = Api(client)
        body = {"email": "ann@x.io", "rootRole": 3, "sendEmail": True}
        made = await api.json("POST", "/api/admin/user-admin", status=201, json=body)
        reset = await api.json(
            "POST", "/api/admin/user-admin/reset-password", json={"id": "ann@x.io"}
        )
    assert "emailSent" not in made
    assert "emailSent" not in reset


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"FLAGCORE_SMTP_HOST": "mail.example.com"}, "FLAGCORE_SMTP_FROM"),
        (
            {
                "FLAGCORE_SMTP_HOST": "mail.example.com",
                "FLAGCORE_SMTP_FROM": "f@example.com",
                "FLAGCORE_SMTP_USER": "u",
            },
            "FLAGCORE_SMTP_PASSWORD",
        ),
        (
            {
                "FLAGCORE_SMTP_HOST": "mail.example.com",
                "FLAGCORE_SMTP_FROM": "f@example.com",
                "FLAGCORE_SMTP_USER": "u",
                "FLAGCORE_SMTP_PASSWORD": SMTP_PASSWORD,
                "FLAGCORE_SMTP_STARTTLS": "off",
            },
            "FLAGCORE_SMTP_STARTTLS",
        ),
        ({"FLAGCORE_SMTP_FROM": "not an address"}, "FLAGCORE_SMTP_FROM"),
        ({"FLAGCORE_SMTP_PORT": "0"}, "FLAGCORE_SMTP_PORT"),
        ({"FLAGCORE_SMTP_HOST": "mail example"}, "FLAGCORE_SMTP_HOST"),
    ],
)
def test_mail_settings_that_cannot_work_stop_the_start_naming_them(
    variables: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named) as refused:
        ServerConfig.from_env(variables)
    assert SMTP_PASSWORD not in str(refused.value)


def test_the_smtp_password_is_not_in_the_settings_repr() -> None:
    config = ServerConfig.from_env(
        {
            "FLAGCORE_SMTP_HOST": "127.0.0.1",
            "FLAGCORE_SMTP_FROM": "f@example.com",
            "FLAGCORE_SMTP_USER": "u",
            "FLAGCORE_SMTP_PASSWORD": SMTP_PASSWORD,
        }
    )
    assert config.smtp_password == SMTP_PASSWORD
    assert SMTP_PASSWORD not in repr(config)
