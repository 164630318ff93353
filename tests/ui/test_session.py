"""The session cookie and CSRF tokens on their own, and the UI's settings."""

from __future__ import annotations

import pytest

from flagcore_http import ServerConfig
from flagcore_http.session_cookie import ANONYMOUS, SessionSigner


def test_a_session_reads_back_until_it_expires() -> None:
    signer = SessionSigner("secret", lifetime_seconds=60)
    session = signer.new_session("ab" * 32, now=1_000)
    cookie = signer.cookie_value(session)
    assert signer.read(cookie, now=1_059) == session
    assert signer.read(cookie, now=1_060) is None
    assert session.signed_in
    assert not signer.new_session().signed_in
    assert signer.new_session().session_id == ANONYMOUS


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c.replace("ab", "cd", 1),  # another token's id
        lambda c: c[:-1] + ("0" if c[-1] != "0" else "1"),  # signature
        lambda c: c.rsplit(".", 1)[0],  # no signature
        lambda c: "x" * 600,  # too long to be ours
        lambda c: c + "é",  # not ASCII
        lambda c: "",
    ],
)
def test_a_tampered_cookie_is_no_session(tamper: object) -> None:
    signer = SessionSigner("secret", lifetime_seconds=60)
    cookie = signer.cookie_value(signer.new_session("ab" * 32, now=1_000))
    assert signer.read(tamper(cookie), now=1_001) is None  # type: ignore[operator]


def test_a_cookie_signed_with_another_secret_is_no_session() -> None:
    mine, theirs = SessionSigner("mine", 60), SessionSigner("theirs", 60)
    cookie = theirs.cookie_value(theirs.new_session("ab" * 32, now=1_000))
    assert mine.read(cookie, now=1_001) is None


def test_csrf_tokens_belong_to_one_session_and_are_not_the_cookie_signature() -> None:
    signer = SessionSigner("secret", 60)
    one, other = signer.new_session(), signer.new_session()
    token = signer.csrf_token(one)
    assert signer.csrf_ok(one, token)
    assert not signer.csrf_ok(other, token)
    assert not signer.csrf_ok(one, None)
    assert not signer.csrf_ok(one, "é" * 64)
    assert token not in signer.cookie_value(one)


def test_ui_settings_come_from_the_environment() -> None:
    config = ServerConfig.from_env(
        {"FLAGCORE_UI_SECRET": "s3cret", "FLAGCORE_UI_SESSION_HOURS": "0.5"}
    )
    assert (config.ui_secret, config.ui_session_seconds) == ("s3cret", 1800.0)
    assert "s3cret" not in repr(config)
    defaults = ServerConfig.from_env({})
    assert (defaults.ui_secret, defaults.ui_session_seconds) == (None, 8 * 3600.0)
    with pytest.raises(ValueError, match="FLAGCORE_UI_SESSION_HOURS"):
        ServerConfig.from_env({"FLAGCORE_UI_SESSION_HOURS": "forever"})
