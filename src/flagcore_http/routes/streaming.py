"""Live updates for SDKs: ``/api/client/streaming`` (SSE) and ``/api/client/delta``.

Both take the client token's scope exactly as ``/api/client/features`` does, and speak
format 2 (strategies name segment ids; segments travel beside the flags). See
docs/streaming.md for the events and the settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from aiohttp import web

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.wire import DeltaAnswer
from flagcore_http import shapes
from flagcore_http.contract import documented
from flagcore_http.keys import TOKEN
from flagcore_http.metrics import METRICS, with_request_id
from flagcore_http.rate_limits import client_address, too_many_requests
from flagcore_http.routes.client import sdk_scope
from flagcore_http.stream_socket import SLICE_BYTES, DrainWatch, limit_send_buffer
from flagcore_http.streaming import HUB, StreamConnection, delta_body, sse
from flagcore_http.streaming_events import Scope, parse_event_id

__all__ = ["routes"]

routes = web.RouteTableDef()

_SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # proxies must pass each event on at once
}
# Seconds a client refused for too many streams is asked to wait before trying again.
_RETRY_STREAM_S = 30.0
_LIMIT_WORDS = {"per_token": "with this token", "per_address": "from this address"}


@routes.get("/api/client/streaming")
@documented(
    {200: shapes.STRING},
    media="text/event-stream",
    query=shapes.SDK_SCOPE_QUERY,
    errors=(400, 429),
)
async def streaming(request: web.Request) -> web.StreamResponse:
    if request.body_exists:
        # A stream never reads its request: a body would sit unread for hours.
        raise InvalidInput(
            "/api/client/streaming takes no request body", [ErrorDetail("no body expected", "$")]
        )
    hub = request.app[HUB]
    environment, projects = sdk_scope(request)
    token = request.get(TOKEN)
    token_hash = token.secret_hash if token is not None else None
    address = client_address(request)
    limit = hub.limit_reached(token_hash, address)
    if limit is not None:
        request.app[METRICS].streams_refused.labels(limit).inc()
        return too_many_requests(
            request,
            f"Too many open streams {_LIMIT_WORDS[limit]}; close some, or poll "
            "/api/client/features instead.",
            _RETRY_STREAM_S,
        )
    response = web.StreamResponse(headers=_SSE_HEADERS)
    with_request_id(request, response)  # observe (issue 18 §2)
    if not hub.admits():
        # Unleash's hint: the SDK falls back to polling (the Node SDK at once).
        await response.prepare(request)
        await response.write(sse("fetch-mode", "polling"))
        await response.write_eof()
        return response
    feed = await hub.feed(environment)
    await hub.sync()
    connection = StreamConnection(
        environment,
        Scope.of(projects),
        token_hash,
        hub.settings.buffer_events,
        address,
    )
    # Registered and greeted with no await between: no change can fall in the gap.
    hub.open(feed, connection)
    first = feed.connect_message(
        parse_event_id(request.headers.get("Last-Event-ID")), connection.scope
    )
    settings = hub.settings
    loop = asyncio.get_running_loop()
    limit_send_buffer(request.transport, settings.send_buffer_bytes)
    watch = DrainWatch(request.transport, settings.drain_timeout, loop.time())
    # Woken often enough to notice a client that stopped reading within the drain timeout.
    check = min(settings.keepalive, settings.drain_timeout / 2)
    try:
        await response.prepare(request)
        await _write(request, response, first or b": up to date\n\n", watch, settings.drain_timeout)
        last_write = loop.time()
        while True:
            try:
                # asyncio.timeout, not wait_for: no extra task per wait, which matters
                # when one change wakes thousands of streams.
                async with asyncio.timeout(check):
                    message = await connection.queue.get()
            except TimeoutError:
                message = b": keep-alive\n\n"
                if loop.time() - last_write < settings.keepalive:
                    message = b""
            if message is None:
                break
            if message:
                await _write(request, response, message, watch, settings.drain_timeout)
                last_write = loop.time()
            if watch.stalled(loop.time()):
                raise TimeoutError("the client stopped reading")
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
    except TimeoutError:
        # The client stopped reading: let go of what it left unsent, at once.
        request.app[METRICS].streams_not_draining.inc()
        _discard(request)
    except ConnectionError:
        pass  # the client went away; nothing to tell it
    finally:
        hub.forget(feed, connection)
    return response


async def _write(
    request: web.Request,
    response: web.StreamResponse,
    message: bytes,
    watch: DrainWatch,
    timeout: float,
) -> None:
    """Write in slices, each waiting for the transport to drain, so a client that does not
    read holds a slice or two here, not the whole message; all of it within ``timeout``.
    (`response.write` alone waits for a drain only once 64 KiB were written.)"""
    async with asyncio.timeout(timeout):
        for start in range(0, len(message), SLICE_BYTES):
            piece = message[start : start + SLICE_BYTES]
            await response.write(piece)
            await request.writer.drain()
            watch.wrote(len(piece))


def _discard(request: web.Request) -> None:
    """Close the connection and drop its unsent bytes (a reset, ``SO_LINGER`` 0), instead
    of the kernel keeping them as an orphan for a client that will never read them."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


@routes.get("/api/client/delta")
@documented({200: DeltaAnswer, 304: None}, query=shapes.SDK_SCOPE_QUERY)
async def delta(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    environment, projects = sdk_scope(request)
    feed = await hub.feed(environment)
    await hub.sync()
    scope = Scope.of(projects)
    history = feed.history
    known = parse_event_id(request.headers.get("If-None-Match"))
    if history.can_resume(known):
        assert known is not None
        events = history.since(known, scope)
        if not events:
            return web.Response(status=304, headers={"ETag": f'"{known}"'})
    else:
        events = [history.state.hydration(scope)]
    return web.Response(
        body=delta_body(events).encode("utf-8"),
        headers={
            "ETag": f'"{events[-1].event_id}"',
            "Content-Type": "application/json; charset=utf-8",
        },
    )
