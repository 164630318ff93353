"""Every error becomes JSON ``{"name", "message", "details": [{"path"?, "message"}]}``.

Domain errors map to their status here, once; aiohttp's own errors (no route, wrong
method, body too large) get the same shape; anything unexpected is a 500 that says
nothing about the internals (and is logged with its traceback).

This is a wrapper around each route's handler, not an aiohttp middleware: the first
middleware makes aiohttp add a second layer of its own, and together they cost about 6%
of a 304's throughput. Unknown paths and methods reach `unmatched`, a catch-all route.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    StorageError,
    Unauthenticated,
)
from flagcore.wire import ErrorAnswer, write_answer
from flagcore_http.auth import authenticate

__all__ = [
    "UNMATCHED_PATH",
    "error_response",
    "guarded",
    "status_of",
    "unmatched_handler",
]

_log = logging.getLogger("flagcore_http")

_STATUS: Sequence[tuple[type[FlagcoreError], int, str]] = (
    (InvalidInput, 400, "BadDataError"),
    (Unauthenticated, 401, "AuthenticationRequired"),
    (Forbidden, 403, "ForbiddenError"),
    (NotFound, 404, "NotFoundError"),
    (NameConflict, 409, "NameExistsError"),
    (Conflict, 409, "ConflictError"),
    (LimitExceeded, 400, "ExceedsLimitError"),
    (RateLimited, 429, "RateLimitedError"),
    (ServiceUnavailable, 503, "ServiceUnavailable"),
    (StorageError, 503, "StorageUnavailable"),
)
_HTTP_NAMES = {
    400: "BadDataError",
    401: "AuthenticationRequired",
    403: "ForbiddenError",
    404: "NotFoundError",
    405: "MethodNotAllowed",
    413: "ContentTooLarge",
    415: "ContentTypeError",
    429: "RateLimitedError",
}


def error_response(
    status: int,
    name: str,
    message: str,
    details: Sequence[ErrorDetail] = (),
    headers: dict[str, str] | None = None,
) -> web.Response:
    """The JSON error shape ``{"name", "message", "details": [...]}`` (`ErrorAnswer`)."""
    body = write_answer(ErrorAnswer.of(name, message, tuple(details)))
    return web.json_response(body, status=status, headers=headers)


def status_of(error: FlagcoreError) -> tuple[int, str]:
    """The HTTP status and error name of a domain error: one table for the API and the UI."""
    for kind, status, name in _STATUS:
        if isinstance(error, kind):
            return status, name
    return 400, "BadDataError"


def _domain_response(error: FlagcoreError) -> web.Response:
    for kind, status, name in _STATUS:
        if isinstance(error, kind):
            headers = None
            if isinstance(error, RateLimited | ServiceUnavailable):
                headers = {"Retry-After": str(max(1, round(error.retry_after + 0.499)))}
            if isinstance(error, LimitExceeded) and error.limit.endswith("_bytes"):
                status, name = 413, "ContentTooLarge"
            return error_response(status, name, error.message, error.details, headers)
    return error_response(400, "BadDataError", error.message, error.details)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def guarded(handler: Handler) -> Handler:
    """``handler`` authenticated, with every failure turned into the JSON error shape."""

    @functools.wraps(handler)
    async def guarded_handler(request: web.Request) -> web.StreamResponse:
        try:
            await authenticate(request)
            return await handler(request)
        except FlagcoreError as error:
            return _domain_response(error)
        except web.HTTPException as http_error:
            if http_error.status < 400:
                raise
            return _http_error_response(request, http_error)
        except Exception:
            _log.exception("unexpected error on %s %s", request.method, request.path)
            return error_response(500, "InternalError", "Something went wrong on our side.")

    return guarded_handler


def _http_error_response(request: web.Request, http_error: web.HTTPException) -> web.Response:
    status = http_error.status
    if status == 404:
        message = f"The path you were looking for ({request.path}) is not available."
    elif status == 405:
        message = f"{request.method} is not allowed on {request.path}."
        allowed = http_error.headers.get("Allow")
        headers = {"Allow": allowed} if allowed else None
        return error_response(405, "MethodNotAllowed", message, headers=headers)
    elif status == 413:
        message = "The request body is too large."
    else:
        message = http_error.text or http_error.reason
    return error_response(status, _HTTP_NAMES.get(status, "HttpError"), message)


async def unmatched(request: web.Request) -> web.StreamResponse:
    """No route: 405 with ``Allow`` when the path exists for other methods, else 404.

    Registered last, on `UNMATCHED_PATH` for every method, so aiohttp tries every real
    route first.
    """
    allowed: set[str] = set()
    for resource in request.app.router.resources():
        if any(_is_unmatched(route.handler) for route in resource):
            continue  # this catch-all itself
        _match, methods = await resource.resolve(request)
        allowed |= methods
    if allowed:
        raise web.HTTPMethodNotAllowed(request.method, sorted(allowed))
    raise web.HTTPNotFound()


def _is_unmatched(handler: object) -> bool:
    """The catch-all's handler, also when wrapped (by `flagcore_http.metrics.observed`)."""
    return (
        handler is unmatched_handler or getattr(handler, "__wrapped__", None) is unmatched_handler
    )


# Any path, newlines included (a decoded %0a): every answer is JSON.
UNMATCHED_PATH = r"/{unmatched_path:[\s\S]*}"
unmatched_handler = guarded(unmatched)
