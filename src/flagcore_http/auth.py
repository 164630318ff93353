"""Authentication: admin tokens on the admin API, client tokens on the client API.

``Authorization: <secret>`` and ``Authorization: Bearer <secret>`` are both accepted.
No token or an unknown one is 401; a token of the wrong kind is 403. With ``--auth
none`` every request passes. Secrets are never logged: the log sees the token's name.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import TokenType
from flagcore.errors import Forbidden, Unauthenticated
from flagcore_http.calls import call
from flagcore_http.config import AuthMode
from flagcore_http.keys import CACHE, CONFIG, REVISION, SERVICE, TOKEN

__all__ = ["authenticate", "presented_secret", "required_kind"]

_TOKEN_CACHE_SIZE = 10_000


def required_kind(path: str) -> TokenType | None:
    if path.startswith(("/api/admin/", "/api/projects/")) or path in (
        "/api/admin",
        "/api/projects",
    ):
        return TokenType.ADMIN
    if path.startswith("/api/client/") or path == "/api/client":
        return TokenType.CLIENT
    return None  # health, docs, and signal endpoints (which check their own tokens)


def presented_secret(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "").strip()
    if header[:7].lower() == "bearer ":
        header = header[7:].strip()
    return header or None


def _article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


async def authenticate(request: web.Request) -> None:
    """Check the request's token for its path; raise `Unauthenticated` or `Forbidden`.

    Runs inside `errors.guarded`, the one wrapper around every handler.
    """
    kind = required_kind(request.path)
    if kind is None or request.app[CONFIG].auth is AuthMode.NONE:
        return
    secret = presented_secret(request)
    if secret is None:
        raise Unauthenticated(
            "This endpoint requires an API token: send it in the Authorization header."
        )
    cache = request.app[CACHE]
    service = request.app[SERVICE]
    request[REVISION] = cache.current_revision(service)
    # Keyed by the presented secret itself: no digest to compute on the hot path. The cache
    # lives in this process only and is emptied whenever the revision moves.
    if secret in cache.tokens:
        token = cache.tokens[secret]
    else:
        token = await call(request, service.authenticate, secret)
        if len(cache.tokens) < _TOKEN_CACHE_SIZE:  # unknown secrets must not fill memory
            cache.tokens[secret] = token
    if token is None:
        raise Unauthenticated("The API token is not valid.")
    if token.type is not kind:
        needed, given = _article(kind.value), _article(token.type.value)
        raise Forbidden(f"This endpoint needs {needed} token, not {given} token.")
    request[TOKEN] = token
