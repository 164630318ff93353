"""Authentication: admin tokens on the admin API, client tokens on the client API,
frontend tokens on the Frontend API, client or frontend tokens on OFREP.

``Authorization: <secret>`` and ``Authorization: Bearer <secret>`` are both accepted (on
OFREP also ``X-API-Key: <secret>``, as OpenFeature's providers send it). No token or an
unknown one is 401; a token of the wrong kind is 403. With ``--auth none`` every request
passes. Secrets are never logged: the log sees the token's name. CORS preflights
(``OPTIONS`` on the frontend and OFREP paths) carry no credentials, so they pass too.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from flagcore.entities import ApiToken, TokenType
from flagcore.errors import Forbidden, Unauthenticated
from flagcore.service import PERSONAL_TOKEN_PREFIX, SignalCredentials, SignalSender
from flagcore_http.calls import call
from flagcore_http.client_cache import secret_digest
from flagcore_http.config import AuthMode
from flagcore_http.keys import (
    CACHE,
    CONFIG,
    PERSONAL_TOKEN,
    PRINCIPAL,
    REVISION,
    SERVICE,
    TOKEN,
    USER,
)
from flagcore_http.rate_limits import tarpit_auth_failure
from flagcore_http.signed_in import cookie_session, session_holder

__all__ = [
    "MAX_SECRET_LENGTH",
    "SIGNAL_CREDENTIALS",
    "SignalCredentialsCache",
    "accepted_kinds",
    "admin_without_token",
    "authenticate",
    "from_this_origin",
    "is_frontend_path",
    "presented_secret",
    "required_kind",
    "signal_sender",
    "token_of_id",
]

# Unleash's secrets are under 200 characters; ours at most a few more. A longer header is
# refused before it is hashed, cached or looked up.
MAX_SECRET_LENGTH = 1024


def admin_without_token(request: web.Request) -> bool:
    """Whether this server can be administered without an admin token (``--auth none``):
    then deleting the last admin token locks nobody out."""
    return request.app[CONFIG].auth is AuthMode.NONE


def required_kind(path: str) -> TokenType | None:
    if path.startswith(("/api/admin/", "/api/projects/")) or path in (
        "/api/admin",
        "/api/projects",
    ):
        return TokenType.ADMIN
    if path.startswith("/api/client/") or path == "/api/client":
        return TokenType.CLIENT
    return None  # health, docs, and signal endpoints (which check their own tokens)


# Unleash refuses client tokens on its Frontend API (and frontend tokens elsewhere); OFREP
# is spoken by server providers (client tokens) and web providers (frontend tokens).
_FRONTEND_KINDS = (TokenType.FRONTEND,)
_OFREP_KINDS = (TokenType.CLIENT, TokenType.FRONTEND)


def is_frontend_path(path: str) -> bool:
    """The Frontend API and OFREP: the paths browsers call (CORS, frontend tokens)."""
    return path.startswith(("/api/frontend/", "/ofrep/")) or path == "/api/frontend"


def accepted_kinds(path: str) -> tuple[TokenType, ...] | None:
    """The token kinds a path accepts; None: the path checks no API token."""
    kind = required_kind(path)
    if kind is not None:
        return (kind,)
    if path == "/api/frontend" or path.startswith("/api/frontend/"):
        return _FRONTEND_KINDS
    if path.startswith("/ofrep/"):
        return _OFREP_KINDS
    return None


# HTTP's own whitespace (RFC 9110 OWS). `str.strip()` would also remove Unicode spaces,
# so a secret padded with a non-breaking space would pass as the secret itself.
_OWS = " \t"


def presented_secret(request: web.Request) -> str | None:
    """The secret as sent, with only HTTP's spaces and tabs trimmed around it."""
    header = request.headers.get("Authorization", "").strip(_OWS)
    if header[:7].lower() == "bearer ":
        header = header[7:].strip(_OWS)
    if not header and request.path.startswith("/ofrep/"):
        header = request.headers.get("X-API-Key", "").strip(_OWS)
    return header or None


def _article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


async def _look_up(request: web.Request, secret: str) -> ApiToken | None:
    """The token for ``secret`` from the store, remembered in the bounded token caches.

    Known tokens are kept by secret in their own LRU; unknown secrets by their digest in
    another, so a flood of made-up secrets costs bounded memory and never evicts a known
    token (each made-up secret costs one store lookup, through the bounded store queue).
    """
    cache = request.app[CACHE]
    digest = secret_digest(secret)
    if digest in cache.unknown_tokens:
        return None
    revision = cache.revision
    # SDK polls use the store's reserve: after a write empties the token cache, they must
    # not be refused because admin or metrics calls fill the queue.
    urgent = request.path == "/api/client/features"
    token = await cache.once(
        ("token", digest, revision),
        lambda: call(request, request.app[SERVICE].tokens.authenticate, secret, urgent=urgent),
    )
    if cache.revision == revision:  # not a token deleted meanwhile
        if token is None:
            cache.unknown_tokens.put(digest, True)
        else:
            cache.known_tokens.put(secret, token)
    return token


async def authenticate(request: web.Request) -> None:
    """Check the request's token for its path; raise `Unauthenticated` or `Forbidden`.

    Runs inside `errors.guarded`, the one wrapper around every handler.
    """
    kinds = accepted_kinds(request.path)
    if kinds is None or request.app[CONFIG].auth is AuthMode.NONE:
        return
    if request.method == "OPTIONS" and is_frontend_path(request.path):
        return  # a CORS preflight: browsers send no credentials with it
    secret = presented_secret(request)
    if secret is None and kinds == (TokenType.ADMIN,) and await _signed_in(request):
        return
    if secret is None:
        raise Unauthenticated(
            "This endpoint requires an API token: send it in the Authorization header."
        )
    if len(secret) > MAX_SECRET_LENGTH or not secret.isascii():
        # No secret is this long, and every secret is ASCII: a header that is not (bytes
        # that are not UTF-8 arrive as surrogates) is refused before it is hashed.
        await tarpit_auth_failure(request)
        raise Unauthenticated("The API token is not valid.")
    cache = request.app[CACHE]
    service = request.app[SERVICE]
    request[REVISION] = cache.current_revision(service)
    token = cache.known_tokens.get(secret)
    if token is None and secret.startswith(PERSONAL_TOKEN_PREFIX) and kinds == (TokenType.ADMIN,):
        # Past the cache of known API tokens, so an SDK's poll never comes this way.
        await _personal_token(request, secret)
        return
    if token is None:
        token = await _look_up(request, secret)
    if token is None:
        # Guessing from one address slows down past a free allowance (rate_limits.py);
        # a valid token never reaches this line, so it is never delayed.
        await tarpit_auth_failure(request)
        raise Unauthenticated("The API token is not valid.")
    if token.type not in kinds:
        needed = _article(" or ".join(kind.value for kind in kinds))
        given = _article(token.type.value)
        raise Forbidden(f"This endpoint needs {needed} token, not {given} token.")
    request[TOKEN] = token


async def _personal_token(request: web.Request, secret: str) -> None:
    """A personal access token (or a service account's) acts as its owner: the request is
    the owner's, as if they were signed in. Asked of the store at every request (the admin
    API, never an SDK's path), so an expired token, or one whose owner was disabled or
    deleted on any server, is refused at once."""
    holder = await call(request, request.app[SERVICE].personal_tokens.token_holder, secret)
    if holder is None:
        await tarpit_auth_failure(request)
        raise Unauthenticated("The personal access token is not valid, or it has expired.")
    request[USER] = holder.user
    request[PERSONAL_TOKEN] = holder.token
    if holder.principal is not None:
        request[PRINCIPAL] = holder.principal


async def _signed_in(request: web.Request) -> bool:
    """The admin API for a browser signed in with a session cookie: its user (or, signed
    in to the UI with an admin token, that token) acts, with their roles: the service
    decides what they may do."""
    holder = await session_holder(request, cookie_session(request))
    if holder is None:
        return False
    _refuse_cross_site_writes(request)
    if holder.user is not None:
        request[USER] = holder.user
        if holder.principal is not None:
            request[PRINCIPAL] = holder.principal
        return True
    token = await token_of_id(request, holder.session.token_id)
    if token is None:
        return False
    request[TOKEN] = token
    return True


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _refuse_cross_site_writes(request: web.Request) -> None:
    """A cookie goes with every request from the same site, other ports included, and a
    plain form or a bodyless ``fetch`` POST needs no CORS preflight. So a POST made with
    the session cookie must say ``application/json`` (which another origin cannot send
    without a preflight the admin API never grants; PUT, PATCH and DELETE always need
    one), and every write, where the browser tells, must come from this origin
    (``Sec-Fetch-Site``)."""
    if request.method in _SAFE_METHODS:
        return
    not_json = request.method == "POST" and request.content_type != "application/json"
    if not_json or not from_this_origin(request):
        raise Forbidden(
            "A write with a browser session must come from this site as application/json."
        )


def from_this_origin(request: web.Request) -> bool:
    """False when the browser says the request comes from another origin
    (``Sec-Fetch-Site``; a client that does not say is taken at its word)."""
    return request.headers.get("Sec-Fetch-Site", "same-origin") in ("same-origin", "none")


async def token_of_id(request: web.Request, token_id: str | None) -> ApiToken | None:
    """The admin token a UI session was made with, if it still exists."""
    if not token_id:
        return None
    tokens = await call(request, request.app[SERVICE].tokens.list_tokens)
    return next((t for t in tokens if t.id == token_id and t.type is TokenType.ADMIN), None)


class SignalCredentialsCache:
    """The signal-token digests of one store revision, so a signal sender is checked in memory.

    A request with no token or an unknown one is refused without queueing any store work;
    only the first request after a revision change reads the credentials (once, however
    many requests arrive together). Token and endpoint changes write events, which move
    the revision, so the next request sees them.
    """

    def __init__(self) -> None:
        self._revision = -1
        self._credentials: SignalCredentials | None = None
        self._loading = asyncio.Lock()

    async def current(self, request: web.Request) -> SignalCredentials:
        service = request.app[SERVICE]
        revision = request.app[CACHE].current_revision(service)
        credentials = self._credentials
        if credentials is None or self._revision != revision:
            async with self._loading:
                credentials = self._credentials
                if credentials is None or self._revision != revision:
                    # Tagged with the revision read before loading: if a change lands in
                    # between, the next request sees a newer revision and loads again.
                    credentials = await call(request, service.signals.signal_credentials)
                    self._credentials, self._revision = credentials, revision
        return credentials


SIGNAL_CREDENTIALS = web.AppKey("signal_credentials", SignalCredentialsCache)


async def signal_sender(request: web.Request, endpoint_name: str) -> SignalSender:
    """Who sends this signal, decided before its body is read or any store work is queued."""
    secret = presented_secret(request)
    if secret is None:
        return SignalCredentials({}, frozenset()).sender(endpoint_name, None)  # raises 401
    credentials = await request.app[SIGNAL_CREDENTIALS].current(request)
    return credentials.sender(endpoint_name, secret)
