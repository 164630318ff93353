"""CORS for the paths browsers call (the Frontend API and OFREP), and only for them.

Allowed origins come from ``--frontend-origins`` / ``FLAGCORE_FRONTEND_ORIGINS`` (a comma
list; ``*`` allows any, Unleash's default). A response to an allowed ``Origin`` carries
``Access-Control-Allow-Origin`` (and exposes ``ETag``, which browser SDKs send back in
``If-None-Match``); a preflight (``OPTIONS``) from an allowed origin is 204 with the
methods and headers these paths take, from any other origin 403 JSON (without an
``Origin`` at all, 400). A request from a
disallowed origin is still answered (CORS is the browser's protection, not ours: tokens
are), but without CORS headers, so the browser keeps the answer from the page. Admin and
client paths never carry CORS headers.
"""

from __future__ import annotations

import functools

from aiohttp import web

from flagcore.errors import ErrorDetail, Forbidden, InvalidInput
from flagcore_http.contract import Parameter, documented
from flagcore_http.errors import Handler
from flagcore_http.keys import CONFIG

__all__ = ["allowed_origin", "preflight", "routes", "with_cors"]

routes = web.RouteTableDef()

_ALLOWED_METHODS = "GET, POST, OPTIONS"
# What Unleash's browser SDKs and OpenFeature's web providers send.
_ALLOWED_HEADERS = (
    "Authorization, Content-Type, If-None-Match, X-API-Key, "
    "Unleash-AppName, Unleash-InstanceId, Unleash-SDK, Unleash-Connection-Id"
)
_MAX_AGE_S = "86400"
_MAX_ORIGIN_LENGTH = 2048


def allowed_origin(origins: tuple[str, ...], origin: str | None) -> str | None:
    """The ``Access-Control-Allow-Origin`` value for ``origin``; None when not allowed."""
    if not origin or len(origin) > _MAX_ORIGIN_LENGTH:
        return None
    if "*" in origins:
        return "*"
    return origin if origin in origins else None


def with_cors(handler: Handler) -> Handler:
    """``handler`` (a frontend or OFREP route, already guarded, so errors are answers too)
    with CORS headers on its answers. Only these routes are wrapped: a signal run for every
    response would cost every SDK poll a call."""

    @functools.wraps(handler)
    async def answer_with_cors(request: web.Request) -> web.StreamResponse:
        response = await handler(request)
        _add_cors_headers(request, response)
        return response

    return answer_with_cors


def _add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    origins = request.app[CONFIG].frontend_origins
    if "*" not in origins:
        # With an allow-list the answer depends on Origin whatever it is (allowed, other,
        # or missing): a cache must not give one origin's answer to another.
        response.headers.add("Vary", "Origin")
    allowed = allowed_origin(origins, request.headers.get("Origin"))
    if allowed is None:
        return
    response.headers["Access-Control-Allow-Origin"] = allowed
    response.headers["Access-Control-Expose-Headers"] = "ETag"


@routes.options("/api/frontend")
@routes.options("/api/frontend/{tail:.*}")
@routes.options("/ofrep/v1/{tail:.*}")
@documented(
    {204: None}, headers={"Origin": Parameter({"type": "string"})}, errors=(400, 403), store=False
)
async def preflight(request: web.Request) -> web.Response:
    """A browser asks whether it may call: 204 for an allowed origin, 403 otherwise."""
    origin = request.headers.get("Origin")
    if not origin:
        raise InvalidInput(
            "A CORS preflight needs an Origin header.", [ErrorDetail("missing", "/headers/Origin")]
        )
    if allowed_origin(request.app[CONFIG].frontend_origins, origin) is None:
        raise Forbidden(
            "This origin may not call the Frontend API or OFREP: add it to --frontend-origins "
            "(FLAGCORE_FRONTEND_ORIGINS)."
        )
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Methods": _ALLOWED_METHODS,
            "Access-Control-Allow-Headers": _ALLOWED_HEADERS,
            "Access-Control-Max-Age": _MAX_AGE_S,
        },
    )
