"""Liveness and readiness; no authentication (docs/operations.md).

``/health`` is liveness only: the process answers HTTP. It touches nothing else, so a
database outage never makes an orchestrator restart a node that still serves SDKs.
``/ready`` is readiness: the store answers a real read, and a store that keeps a
connection of its own to learn of changes (PostgreSQL's notification listener) has it.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore.wire import HealthAnswer, UsageBufferAnswer
from flagcore_http.answering import answered
from flagcore_http.calls import call, service
from flagcore_http.contract import documented
from flagcore_http.usage_buffer import USAGE_BUFFER

__all__ = ["routes"]

routes = web.RouteTableDef()


_GOOD = HealthAnswer("GOOD")


@routes.get("/health")
@documented({200: HealthAnswer}, store=False)
async def health(request: web.Request) -> web.Response:
    return answered(_GOOD)


def _answer(
    request: web.Request, health: str, message: str | None = None, status: int = 200
) -> web.Response:
    """The readiness answer, with ``usageBuffer`` while SDK usage waits for the store
    longer than its flush interval (`UsageBuffer.behind`), or is held at all while the
    node is not ready."""
    buffer = request.app[USAGE_BUFFER]
    held = None
    if buffer.behind or (status != 200 and buffer.holding):
        held = UsageBufferAnswer(
            buffer.entries,
            buffer.capacity,
            buffer.evaluations,
            buffer.instances,
            buffer.dropped_evaluations,
            buffer.dropped_registrations,
        )
    return answered(HealthAnswer(health, message, held), status=status)


@routes.get("/ready")
@documented({200: HealthAnswer, 503: HealthAnswer})
async def ready(request: web.Request) -> web.Response:
    """Ready when the listener (if any) is connected and the store answers one read; the
    usage held for the store (if any) is shown either way."""
    storage = service(request).storage
    if not storage.available():
        message = (
            "the database is unavailable; SDKs are served from memory, their metrics and "
            "registrations held in memory, and writes are refused until it is back"
        )
        return _answer(request, "BAD", message, 503)
    try:
        await call(request, storage.check)
    except FlagcoreError as error:
        return _answer(request, "BAD", error.message, 503)
    return _answer(request, "GOOD")
