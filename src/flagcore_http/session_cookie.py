"""The browser's session cookie (the UI's, and the admin API's for a signed-in person)
and CSRF tokens.

The cookie is signed (HMAC-SHA256 with the server's UI secret) and holds the id of a
server-side session (`flagcore.service.sessions`: 256 random bits, stored only as their
SHA-256), an expiry and a random nonce. The row is the session: signing out, "sign out
everywhere", an admin, or deleting or disabling a user ends it on every server at its next
request; the signature only spares the store a lookup for cookies that are not ours. The
CSRF token of a form is an HMAC of the session's nonce, so a page from another site cannot
know it; every POST must carry it.

Visitors who have not signed in get an anonymous session (no server row) so the sign-in
form is CSRF-protected too; signing in replaces it with a new id and a new nonce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

import attrs
from aiohttp import web

from flagcore_http.public_address import cookies_secure

__all__ = [
    "ANONYMOUS",
    "COOKIE_NAME",
    "CSRF_FIELD",
    "SIGNER",
    "Session",
    "SessionSigner",
    "set_session_cookie",
]

COOKIE_NAME = "flagcore_session"
CSRF_FIELD = "_csrf"
ANONYMOUS = "-"
# A cookie is a few hundred bytes; anything longer is not ours and is not even hashed.
_MAX_COOKIE_LENGTH = 512
# A sign-in flow's cookie holds the page to return to (at most 2,048 characters): within
# the 4 kB a browser keeps of a cookie.
_MAX_SEALED_LENGTH = 4_000


@attrs.frozen(repr=False)
class Session:
    session_id: str  # the server-side session's id; ANONYMOUS when nobody signed in
    expires_at: int  # Unix seconds
    nonce: str

    @property
    def signed_in(self) -> bool:
        return self.session_id != ANONYMOUS

    def __repr__(self) -> str:  # the id is a credential: never in a log line
        return f"Session(signed_in={self.signed_in}, expires_at={self.expires_at})"


class SessionSigner:
    """Makes and checks session cookies and CSRF tokens with one secret."""

    def __init__(self, secret: str | bytes, lifetime_seconds: float) -> None:
        key = secret.encode("utf-8") if isinstance(secret, str) else secret
        # Derived keys: a cookie's signature can never pass as a CSRF token.
        self._cookie_key = hmac.new(key, b"flagcore ui cookie", hashlib.sha256).digest()
        self._csrf_key = hmac.new(key, b"flagcore ui csrf", hashlib.sha256).digest()
        self._flow_key = hmac.new(key, b"flagcore sign-in flow", hashlib.sha256).digest()
        self.lifetime_seconds = lifetime_seconds

    def new_session(self, session_id: str = ANONYMOUS, *, now: float | None = None) -> Session:
        issued = time.time() if now is None else now
        return Session(session_id, int(issued + self.lifetime_seconds), secrets.token_urlsafe(18))

    def cookie_value(self, session: Session) -> str:
        body = f"{session.session_id}.{session.expires_at}.{session.nonce}"
        return f"{body}.{self._sign(self._cookie_key, body)}"

    def read(self, cookie: str | None, *, now: float | None = None) -> Session | None:
        """The session in ``cookie``, or None if it is missing, forged or expired."""
        if not cookie or len(cookie) > _MAX_COOKIE_LENGTH or not cookie.isascii():
            return None
        body, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature, self._sign(self._cookie_key, body)):
            return None
        session_id, expires, nonce = body.split(".", 2)
        if not expires.isdigit() or int(expires) <= (time.time() if now is None else now):
            return None
        return Session(session_id, int(expires), nonce)

    def csrf_token(self, session: Session) -> str:
        return self._sign(self._csrf_key, session.nonce)

    def csrf_ok(self, session: Session, presented: object) -> bool:
        return (
            isinstance(presented, str)
            and presented.isascii()
            and hmac.compare_digest(presented, self.csrf_token(session))
        )

    def sealed(self, text: str) -> str:
        """``text`` signed for a short-lived cookie of its own (a sign-in with a provider)."""
        body = base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")
        return f"{body}.{self._sign(self._flow_key, body)}"

    def unsealed(self, value: str | None) -> str | None:
        """The text `sealed` signed, or None for a value that is not ours."""
        if not value or len(value) > _MAX_SEALED_LENGTH or not value.isascii():
            return None
        body, _, signature = value.rpartition(".")
        if not hmac.compare_digest(signature, self._sign(self._flow_key, body)):
            return None
        return base64.urlsafe_b64decode(body).decode("utf-8")

    @staticmethod
    def _sign(key: bytes, body: str) -> str:
        return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest()


# Set by the UI's setup; read by the UI's pages and by the admin API's authentication.
SIGNER = web.AppKey("session_signer", SessionSigner)


def set_session_cookie(
    request: web.Request, response: web.StreamResponse, session: Session
) -> None:
    """``session``'s cookie on ``response``: for the whole site, out of scripts' reach, sent
    by no other site's page, and only over HTTPS when the request came over it."""
    signer = request.app[SIGNER]
    response.set_cookie(
        COOKIE_NAME,
        signer.cookie_value(session),
        max_age=int(signer.lifetime_seconds),
        path="/",
        httponly=True,
        samesite="Strict",
        secure=cookies_secure(request),
    )
