"""Request bodies: in within ``body_timeout`` or the connection closes, for every route.

aiohttp waits for a body as long as its client likes; a client that sends it a byte at a
time would hold the connection forever, and enough of them fill ``--max-connections``. A
timer (not a timeout around the handler, which would cut a slow store call after the
body is in) closes the connection when the body is still unfinished; the handler's
pending read then fails, and nothing is stored. The API's routes (`app.py`) and the UI's
forms (`ui.pages`) both go through `within_body_deadline`.

A body is read as sent: any ``Content-Encoding`` but identity is a 415 before a byte of it
is read (aiohttp's own inflating is off, `app.py`), so a small compressed body can never
cost the CPU of the gigabyte it expands to.

A client that hangs up before its body is in is no server error either: the read fails
with ``ConnectionResetError``, which becomes a one-line log and a 4xx nobody reads,
never a traceback and a 500.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from flagcore.errors import ErrorDetail
from flagcore_http.closing import closing_when_sent
from flagcore_http.errors import error_response

__all__ = [
    "METHODS_WITH_BODIES",
    "with_body_deadline",
    "within_body_deadline",
]

_log = logging.getLogger("flagcore_http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

METHODS_WITH_BODIES = frozenset({"POST", "PUT", "PATCH"})


def with_body_deadline(handler: Handler, timeout: float) -> Handler:
    """``handler``, its request body due within ``timeout`` seconds."""

    @functools.wraps(handler)
    async def handler_with_body_deadline(request: web.Request) -> web.StreamResponse:
        return await within_body_deadline(request, handler, timeout)

    return handler_with_body_deadline


async def within_body_deadline(
    request: web.Request, handler: Handler, timeout: float
) -> web.StreamResponse:
    """``handler(request)``, with the connection closed if the body is not in within
    ``timeout`` seconds of the handler's start (right after the headers)."""
    if not request.body_exists:
        return await handler(request)
    encoding = request.headers.get("Content-Encoding")
    if encoding is not None and encoding.strip(" \t").lower() != "identity":
        refused = _unsupported_encoding()
        refused.force_close()  # nothing more is read from this connection, sent or not
        return closing_when_sent(request, refused)
    expired: list[bool] = []
    timer = asyncio.get_running_loop().call_later(
        timeout, _drop_unfinished_body, request, timeout, expired
    )
    try:
        return await handler(request)
    except ConnectionResetError:
        # Nobody will read these answers: the connection is closed. They keep the access
        # log honest (a 4xx: the client's doing) and spare the error log a traceback.
        if expired:
            return error_response(
                408, "RequestTimeout", f"The request body did not arrive within {timeout:g} s."
            )
        if not _connection_lost(request):
            raise
        _log.info(
            "%s (%s %s) closed the connection before its request body arrived",
            request.remote,
            request.method,
            request.path,
        )
        return error_response(
            400, "IncompleteBody", "The connection closed before the request body arrived."
        )
    finally:
        timer.cancel()


def _unsupported_encoding() -> web.Response:
    return error_response(
        415,
        "ContentTypeError",
        "Request bodies are accepted as sent (Content-Encoding: identity) only; "
        "send the body uncompressed.",
        [ErrorDetail("only identity is accepted", "/headers/Content-Encoding")],
    )


def _connection_lost(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _drop_unfinished_body(request: web.Request, timeout: float, expired: list[bool]) -> None:
    if request.content.is_eof() or request.transport is None:
        return
    expired.append(True)
    _log.warning(
        "closing a connection from %s (%s %s): its request body did not arrive within %g s",
        request.remote,
        request.method,
        request.path,
        timeout,
    )
    request.transport.close()
