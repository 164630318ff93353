"""Listening, and a bound on open connections (docs/security.md, "Timeouts and connections").

aiohttp holds a connection as long as its client likes: one that sends its headers a byte
at a time is never dropped, and enough of them exhaust the open-file limit. Three guards:

- headers: aiohttp's keep-alive timer also runs from the moment a connection opens and
  drops it if no complete request has arrived when it fires, so ``header_timeout`` is
  passed to it (complete headers within that time of the connection or of the previous
  response; idle keep-alive connections close then too, as Node's 5 s does for Unleash);
- bodies: `body_deadline.py` closes the connection when a body (the API's or a UI form's)
  is not in within ``body_timeout``;
- count: `ListeningSite` counts connections in the protocol factory (exact, unlike the
  server's own list, which lags behind a burst of accepts) and answers 503 past the limit,
  which `connection_budget` lowers to fit the open-file limit.

And what the server says of itself: requests aiohttp cannot parse get a JSON 400 that
quotes nothing of them (aiohttp's own answer quotes the offending bytes, a secret in a
header included) and an INFO line, not an ERROR with the bytes; ``Server`` names no
version (`hide_server_version`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Callable
from typing import ClassVar, cast

from aiohttp import web, web_protocol, web_response
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_request import BaseRequest

__all__ = [
    "SERVER_NAME",
    "ConnectionLimit",
    "ListeningSite",
    "connection_budget",
    "hide_server_version",
    "listening_socket",
]

# What every answer's `Server` header says: no Python or aiohttp version to look up.
SERVER_NAME = "flagcore"

_log = logging.getLogger("flagcore_http")
# Files the process needs besides client connections: the database and its WAL, the
# listening socket, standard streams, and headroom for the store's worker.
FILE_RESERVE = 64
_WARN_EVERY_S = 60.0

_BODY = json.dumps(
    {
        "name": "ServiceUnavailable",
        "message": "The server has too many open connections; try again shortly.",
        "details": [{"message": "connection limit reached"}],
    }
).encode()
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
    + str(len(_BODY)).encode()
    + b"\r\n\r\n"
    + _BODY
)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening on ``host:port``, before anything else is opened.

    Binding first means a taken port stops the start before a database file is created
    or a token made (a token made then would never be shown).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


def connection_budget(wanted: int) -> tuple[int, str | None]:
    """How many connections can be open at once, and a note when fewer than ``wanted``.

    Raises the soft open-file limit towards ``wanted`` plus a reserve when the hard limit
    allows it; otherwise lowers the count to what fits.
    """
    try:
        import resource
    except ImportError:  # not on POSIX: nothing to ask
        return wanted, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + FILE_RESERVE
    infinite = resource.RLIM_INFINITY
    if soft != infinite and soft < needed:
        target = needed if hard == infinite else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == infinite or soft >= needed:
        return wanted, None
    allowed = max(1, soft - FILE_RESERVE)
    return allowed, (
        f"the open-file limit is {soft}: at most {allowed} connections, not {wanted} "
        "(raise it with ulimit -n)"
    )


class ConnectionLimit:
    """Counts open connections; past ``maximum``, new ones get a 503 and are closed."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.open = 0
        self._warned_at = -_WARN_EVERY_S

    def factory(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        """The protocol factory for ``server``'s connections, counting them.

        Each connection is aiohttp's own protocol, given a class that only adds the count
        when the connection is lost (no wrapper: a wrapper's call on every read cost the
        SDK poll about 1% of its time)."""
        counted = type(
            "_CountedRequestHandler", (_EdgeRequestHandler,), {"__slots__": (), "limit": self}
        )

        def protocol() -> asyncio.Protocol:
            if self.open >= self.maximum:
                self._warn()
                return _Refused()
            handler = server()
            # aiohttp's Server builds the protocol itself; ours differs in two methods and
            # adds no state (empty __slots__), so the instance can take its class.
            handler.__class__ = counted
            self.open += 1
            return handler

        return protocol

    def _warn(self) -> None:
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            _log.warning(
                "connection limit reached (%d open): refusing new connections with 503",
                self.maximum,
            )


class _Refused(asyncio.Protocol):
    """Past the limit: say so in one response and close, holding no file for long."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; uvloop's do not subclass asyncio.WriteTransport (--loop uvloop).
        writer = cast(asyncio.WriteTransport, transport)
        writer.write(REFUSAL)
        writer.close()


def hide_server_version() -> None:
    """Answers say ``Server: flagcore``, not ``Python/3.11 aiohttp/3.x``.

    aiohttp adds its default to any response without a ``Server`` header, from this
    module constant: replacing it covers every answer (API, UI, its own errors) at no
    cost per request, where a response hook would cost every SDK poll a call.
    """
    web_response.SERVER_SOFTWARE = SERVER_NAME  # type: ignore[attr-defined]  # not re-exported


_MALFORMED = "The request could not be read as HTTP; nothing of it was processed."


class _EdgeRequestHandler(web_protocol.RequestHandler):
    """aiohttp's protocol, answering requests it cannot parse without quoting them, and
    counted out of its `ConnectionLimit` when its connection is lost."""

    __slots__ = ()
    limit: ClassVar[ConnectionLimit]

    def connection_lost(self, exc: BaseException | None) -> None:
        self.limit.open -= 1
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not isinstance(exc, HttpProcessingError) or status >= 500:
            return super().handle_error(request, status, exc, message)
        if request.writer.output_size > 0:  # as aiohttp: too late for an answer
            raise ConnectionError("a response was already sent")
        # The client's mistake, not the server's: no ERROR, no traceback. What went wrong
        # is on the first line of aiohttp's message; the lines after it quote the request's
        # bytes (a secret in a header too), so they are never logged, nor answered.
        first = str(exc.message).splitlines()[0] if exc.message else ""
        _log.info(
            "refused a malformed request from %s: %s %s", request.remote, type(exc).__name__, first
        )
        body = {
            "name": "BadDataError",
            "message": _MALFORMED,
            "details": [{"message": type(exc).__name__}],
        }
        response = web.json_response(body, status=status)
        response.force_close()
        return response


class ListeningSite(web.BaseSite):
    """An aiohttp site on a socket already listening, with a `ConnectionLimit`."""

    def __init__(self, runner: web.BaseRunner, sock: socket.socket, limit: ConnectionLimit) -> None:
        super().__init__(runner)
        self._sock = sock
        self._limit = limit

    @property
    def name(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._limit.factory(server),
            sock=self._sock,
            backlog=self._backlog,
        )
