"""Signal endpoints (admin API) and the public endpoint that receives signals.

``POST /api/signal-endpoint/<name>`` takes ``Authorization: Bearer <endpoint token>`` and
an optional JSON body. The token is checked before anything else; the body is read whole
(whatever its framing) but never past the payload limit (413); see docs/signals-and-actions.md.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, LimitExceeded, RateLimited
from flagcore.service import SIGNAL_PAYLOAD_MAX_DEPTH, SignalSender
from flagcore.wire import (
    INT64_MAX,
    CreatedId,
    SignalAnswer,
    SignalEndpointAnswer,
    SignalEndpointsAnswer,
    SignalsAnswer,
    SignalTokenAnswer,
    SignalTokensAnswer,
    SignalTokenWithSecret,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.auth import signal_sender
from flagcore_http.bodies import as_keywords, int_parameter, parse_json, query_int, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.errors import error_response
from flagcore_http.keys import CONFIG
from flagcore_http.metrics import METRICS, signal_refusal_reason
from flagcore_http.rate_limits import too_many_requests
from flagcore_http.routes.actions import schedule_action_sets
from flagcore_http.wire import EndpointBody, EndpointUpdate, SignalTokenBody

__all__ = ["routes"]

routes = web.RouteTableDef()
_log = logging.getLogger("flagcore_http")
ENDPOINTS = "/api/admin/signal-endpoints"

# What can follow a created endpoint (OpenAPI links, for stateful tests).
_CREATED = {"id": "$response.body#/id"}


@routes.get(ENDPOINTS)
@documented({200: SignalEndpointsAnswer})
async def list_endpoints(request: web.Request) -> web.Response:
    endpoints = await call(request, service(request).signals.list_signal_endpoints)
    return answered(SignalEndpointsAnswer(tuple(map(SignalEndpointAnswer.of, endpoints))))


@routes.post(ENDPOINTS)
@documented(
    {201: SignalEndpointAnswer},
    body=EndpointBody,
    errors=(409,),
    links={
        "signals.get_endpoint": _CREATED,
        "signals.update_endpoint": _CREATED,
        "signals.delete_endpoint": _CREATED,
        "signals.create_token": _CREATED,
        "signals.list_tokens": _CREATED,
        "signals.endpoint_signals": _CREATED,
    },
)
async def create_endpoint(request: web.Request) -> web.Response:
    body = await read_body(request, EndpointBody)
    created = await call(
        request,
        service(request).signals.create_signal_endpoint,
        body.name,
        body.description,
        enabled=body.enabled,
        actor=actor(request),
    )
    return answered(SignalEndpointAnswer.of(created, []), status=201)


@routes.get(ENDPOINTS + "/{id}")
@documented({200: SignalEndpointAnswer}, path={"id": shapes.ID})
async def get_endpoint(request: web.Request) -> web.Response:
    endpoint_id = int_parameter(request, "id")
    endpoint = await call(request, service(request).signals.get_signal_endpoint, endpoint_id)
    tokens = await call(request, service(request).signals.list_signal_endpoint_tokens, endpoint_id)
    return answered(SignalEndpointAnswer.of(endpoint, tokens))


@routes.put(ENDPOINTS + "/{id}")
@documented({200: SignalEndpointAnswer}, body=EndpointUpdate, errors=(409,), path={"id": shapes.ID})
async def update_endpoint(request: web.Request) -> web.Response:
    endpoint_id = int_parameter(request, "id")
    body = await read_body(request, EndpointUpdate)
    updated = await call(
        request,
        service(request).signals.update_signal_endpoint,
        endpoint_id,
        **as_keywords(body),
        actor=actor(request),
    )
    return answered(SignalEndpointAnswer.of(updated))


@routes.delete(ENDPOINTS + "/{id}")
@documented({200: None}, path={"id": shapes.ID})
async def delete_endpoint(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).signals.delete_signal_endpoint,
        int_parameter(request, "id"),
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(ENDPOINTS + "/{id}/tokens")
@documented({200: SignalTokensAnswer}, path={"id": shapes.ID})
async def list_tokens(request: web.Request) -> web.Response:
    tokens = await call(
        request, service(request).signals.list_signal_endpoint_tokens, int_parameter(request, "id")
    )
    return answered(SignalTokensAnswer(tuple(map(SignalTokenAnswer.of, tokens))))


@routes.post(ENDPOINTS + "/{id}/tokens")
@documented(
    {201: SignalTokenWithSecret},
    body=SignalTokenBody,
    errors=(409,),
    path={"id": shapes.ID},
)
async def create_token(request: web.Request) -> web.Response:
    endpoint_id = int_parameter(request, "id")
    body = await read_body(request, SignalTokenBody)
    created = await call(
        request,
        service(request).signals.create_signal_endpoint_token,
        endpoint_id,
        body.name,
        actor=actor(request),
    )
    token = created.token
    return answered(
        SignalTokenWithSecret(token.id, token.name, token.created_at, created.secret), status=201
    )


@routes.delete(ENDPOINTS + "/{id}/tokens/{token_id}")
@documented({200: None}, path={"id": shapes.ID, "token_id": shapes.ID})
async def delete_token(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).signals.delete_signal_endpoint_token,
        int_parameter(request, "id"),
        int_parameter(request, "token_id"),
        actor=actor(request),
    )
    return web.Response(status=200)


def _page(request: web.Request) -> tuple[int, int | None]:
    limit = query_int(request, "limit", 50, 1, 1000) or 50
    return limit, query_int(request, "before", None, 0, INT64_MAX)


@routes.get(ENDPOINTS + "/{id}/signals")
@documented(
    {200: SignalsAnswer},
    query=shapes.SIGNAL_PAGE,
    path={"id": shapes.ID},
)
async def endpoint_signals(request: web.Request) -> web.Response:
    limit, before = _page(request)
    signals = await call(
        request,
        service(request).signals.list_signals,
        int_parameter(request, "id"),
        limit=limit,
        before_id=before,
    )
    return answered(SignalsAnswer(tuple(map(SignalAnswer.of, signals))))


@routes.get("/api/admin/signals")
@documented({200: SignalsAnswer}, query=shapes.SIGNAL_PAGE)
async def recent_signals(request: web.Request) -> web.Response:
    limit, before = _page(request)
    signals = await call(
        request, service(request).signals.list_signals, limit=limit, before_id=before
    )
    return answered(SignalsAnswer(tuple(map(SignalAnswer.of, signals))))


def _too_large(limit: int) -> LimitExceeded:
    return LimitExceeded(
        f"a signal payload may have at most {limit} bytes", "signal_payload_bytes", limit
    )


async def read_signal_body(request: web.Request, limit: int, timeout: float) -> bytes:
    """The whole body, however it is framed, or 413 as soon as it passes ``limit`` bytes.

    A declared ``Content-Length`` over the limit is refused before reading. Otherwise
    the body is read until it ends (chunked, split across TCP segments, or sent slowly)
    and never buffered past ``limit + 1`` bytes. A body that does not end within
    ``timeout`` seconds (``ServerConfig.signal_body_timeout``: a sender that declares more
    than it sends, or drips it, holds a connection no longer) is 408 (so is broken
    chunked framing: aiohttp then never ends the body); one cut short by the sender is 400.
    """
    declared = request.content_length
    if declared is not None and declared > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    received = 0
    try:
        async with asyncio.timeout(timeout):
            while chunk := await request.content.read(limit + 1 - received):
                chunks.append(chunk)
                received += len(chunk)
                if received > limit:
                    raise _too_large(limit)
    except TimeoutError:
        raise _BodyTimeout from None
    except (web.RequestPayloadError, ConnectionError) as exc:
        # The sender broke the framing or hung up mid-body: a client error, not ours. (The
        # answer rarely reaches anyone; what matters is that nothing is stored or logged
        # as a server failure.)
        raise InvalidInput(
            "the body ended before it was complete", [ErrorDetail(str(exc)[:200], "$")]
        ) from None
    return b"".join(chunks)


class _BodyTimeout(Exception):
    """The body did not arrive in time (answered 408 by the route)."""


def _payload(request: web.Request, raw: bytes) -> Any:
    """The signal's payload: none for an empty body, else strict JSON (415 unless JSON)."""
    if not raw.strip():
        return None
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise web.HTTPUnsupportedMediaType(text="A signal body must be application/json.")
    return parse_json(raw, max_depth=SIGNAL_PAYLOAD_MAX_DEPTH)


def _refused_early(request: web.Request, sender: SignalSender) -> web.Response | None:
    """The 429 for a sender inside the interval after this process stored its endpoint's
    last signal, decided in memory before the body is read; the connection is closed after
    it, so a body still coming is never read."""
    try:
        service(request).signals.refuse_early_if_rate_limited(sender)
    except RateLimited as error:
        return too_many_requests(request, error.message, error.retry_after, error.details)
    return None


@routes.post("/api/signal-endpoint/{name}")
@documented(
    {202: CreatedId},
    body=shapes.ANY_JSON,
    body_required=False,
    errors=(408, 429),
)
async def receive_signal(request: web.Request) -> web.StreamResponse:
    """Receive a signal (endpoint token required; body optional JSON).

    The token is checked first, in memory: a refused sender costs no body read and no
    store work; so is the rate, as far as this process knows it. Then the body, the
    payload's rules, the rate check again (another signal may have landed meanwhile), and
    one transaction that decides the rate limit and stores the signal.
    """
    try:
        response = await _receive_signal(request)
    except (FlagcoreError, web.HTTPException) as refused:  # observe (issue 18 §2)
        request.app[METRICS].signals_refused.labels(signal_refusal_reason(refused)).inc()
        raise
    if response.status == 202:
        request.app[METRICS].signals_received.inc()
    else:
        reason = signal_refusal_reason(response.status)
        request.app[METRICS].signals_refused.labels(reason).inc()
    return response


async def _receive_signal(request: web.Request) -> web.StreamResponse:
    svc = service(request)
    sender = await signal_sender(request, request.match_info["name"])
    refused = _refused_early(request, sender)  # a burst: 429 before the body is read
    if refused is not None:
        return refused
    timeout = request.app[CONFIG].signal_body_timeout
    try:
        raw = await read_signal_body(request, svc.limits.signal_payload_bytes, timeout)
    except _BodyTimeout:
        response = error_response(
            408, "RequestTimeout", f"the body did not arrive within {timeout:g} seconds"
        )
        response.force_close()  # the connection is not reused for another request
        return response
    payload = _payload(request, raw)
    svc.signals.refuse_early_if_rate_limited(sender)  # in memory: a burst queues no store work
    signal = await call(request, svc.signals.accept_signal, sender, payload)
    # Action sets run right after, without holding up the sender.
    schedule_action_sets(request.app, signal)
    return answered(CreatedId(signal.id), status=202)
