"""The edge's HTTP face: what SDKs, browsers and operators ask of it.

The answers are the server's: client-features payloads are the upstream's bytes or
written by `flagcore.wire`'s writer; the Frontend API is `flagcore.service.FrontendView`
and `frontend_context`, as in ``flagcore serve``; errors are the server's JSON shape
(`flagcore_http.errors`). Nothing here reads or writes flags: `Edge` keeps them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound, ServiceUnavailable
from flagcore.service import FrontendView, client_features_format, frontend_context
from flagcore.wire import (
    ValidatedEdgeTokens,
    read_bulk_metrics,
    read_metrics_body,
    read_registration,
    read_token_strings,
    registration_started,
    write_answer,
)
from flagcore_edge.edge import Edge
from flagcore_edge.forwarding import BULK_PATH, BULK_POST_BYTES, HeldReport, split_bulk
from flagcore_edge.prometheus import exposition
from flagcore_edge.snapshots import Scope, TokenSnapshot
from flagcore_edge.tokens import FollowedToken
from flagcore_http.bodies import parse_json, structure_body
from flagcore_http.errors import error_response, status_of
from flagcore_http.routes.frontend import MAX_CONTEXT_BODY_BYTES, answer_with_etag, context_parts
from flagcore_http.routes.ofrep import ViewFinder, ofrep_flag, ofrep_flags
from flagcore_http.streaming import delta_body, sse
from flagcore_http.wire import ContextBody

__all__ = ["EDGE", "REQUESTS", "create_edge_app"]

EDGE = web.AppKey("edge", Edge)
REQUESTS = web.AppKey("edge_requests", Counter)
MAX_USAGE_BODY_BYTES = 1024 * 1024
MAX_VALIDATE_BODY_BYTES = 256 * 1024
_KEEPALIVE_S = 30.0
# The server's names for the statuses aiohttp raises (flagcore_http.errors).
_HTTP_NAMES = {
    404: "NotFoundError",
    405: "MethodNotAllowed",
    413: "ContentTooLarge",
    415: "ContentTypeError",
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
routes = web.RouteTableDef()


def _guarded(handler: Handler) -> Handler:
    """Every refusal in the server's JSON error shape, never a bare 500."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            response = await handler(request)
        except FlagcoreError as error:
            status, name = status_of(error)
            retry = getattr(error, "retry_after", None)
            headers = None if retry is None else {"Retry-After": str(max(1, round(retry)))}
            response = error_response(status, name, error.message, error.details, headers)
        except web.HTTPException as error:
            name = _HTTP_NAMES.get(error.status, "BadDataError")
            response = error_response(error.status, name, error.text or error.reason)
        request.app[REQUESTS][(request.match_info.route.resource.canonical, response.status)] += 1  # type: ignore[union-attr]
        return response

    return guarded


# The payload format of an `Unleash-Client-Spec` value: SDKs send a handful of versions,
# so each is read once (a semver parse per poll cost several µs).
_format_of = functools.lru_cache(maxsize=256)(client_features_format)


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    return header == etag or any(p.strip().removeprefix("W/") == etag for p in header.split(","))


def _filters(request: web.Request) -> tuple[tuple[str, ...] | None, str | None]:
    if not request.query_string:
        return None, None
    query = request.query
    projects = tuple(sorted(set(query.getall("project", []) + query.getall("project[]", []))))
    return projects or None, query.get("namePrefix") or None


@routes.get("/api/client/features")
async def client_features(request: web.Request) -> web.StreamResponse:
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    snapshot = await _snapshot_for(edge, token, request)
    projects, name_prefix = _filters(request)
    rendered = snapshot.answer(projects, name_prefix)
    headers = {"ETag": rendered.etag, "Cache-Control": "no-cache"}
    if _etag_matches(request.headers.get("If-None-Match"), rendered.etag):
        return web.Response(status=304, headers=headers)
    headers["Content-Type"] = "application/json; charset=utf-8"
    return web.Response(body=rendered.body, headers=headers)


async def _snapshot_for(edge: Edge, token: FollowedToken, request: web.Request) -> TokenSnapshot:
    """The payload of the format the SDK's ``Unleash-Client-Spec`` asks for."""
    assert token.snapshot is not None
    if _format_of(request.headers.get("Unleash-Client-Spec")) >= 2:
        return token.snapshot
    return await edge.legacy_snapshot(token)


def _delta_etag(snapshot: TokenSnapshot) -> str:
    return '"delta-' + snapshot.etag.strip('"') + '"'


@routes.get("/api/client/delta")
async def client_delta(request: web.Request) -> web.Response:
    """Unleash's delta API, answered with one ``hydration`` event whenever the token's
    flags changed (the edge keeps whole payloads, not their history): an SDK replaces its
    flags with it, as after a reconnection."""
    token = await request.app[EDGE].client_token(request.headers.get("Authorization"))
    assert token.snapshot is not None
    etag = _delta_etag(token.snapshot)
    if _etag_matches(request.headers.get("If-None-Match"), etag):
        return web.Response(status=304, headers={"ETag": etag})
    body = delta_body([token.snapshot.hydration()])
    return web.Response(text=body, content_type="application/json", headers={"ETag": etag})


@routes.get("/api/client/streaming")
async def client_streaming(request: web.Request) -> web.StreamResponse:
    """Unleash's SSE stream: ``unleash-connected`` with a hydration, then an
    ``unleash-updated`` hydration each time the token's flags change upstream."""
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    assert token.snapshot is not None
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    sent = token.snapshot
    hydration = sent.hydration()
    await response.write(sse("unleash-connected", delta_body([hydration]), hydration.event_id))
    while not edge.closing:
        changed = edge.changed
        try:
            await asyncio.wait_for(changed.wait(), _KEEPALIVE_S)
        except TimeoutError:
            await response.write(b": keep-alive\n\n")
            continue
        current = token.snapshot
        if current is None or current is sent or token.digest not in edge.followed:
            continue
        sent = current
        hydration = current.hydration()
        await response.write(sse("unleash-updated", delta_body([hydration]), hydration.event_id))
    return response


@routes.get("/api/client/features/{name}")
async def client_feature(request: web.Request) -> web.Response:
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    name = request.match_info["name"]
    flag = (await _snapshot_for(edge, token, request)).flag_json(name)
    if flag is None:
        raise NotFound(f"Could not find feature flag {name}")
    return web.json_response(flag)


async def _json_object(request: web.Request, max_bytes: int) -> dict[str, Any]:
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise web.HTTPUnsupportedMediaType(
            text=f"We accept application/json bodies, not {content_type or 'no content type'}."
        )
    if request.content_length is not None and request.content_length > max_bytes:
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=request.content_length)
    chunks: list[bytes] = []
    size = 0
    # Read to the end (one read may return only what has arrived so far), refusing as soon
    # as more than max_bytes came: a body sent in chunks declares no length to refuse by.
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > max_bytes:
            raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=size)
        chunks.append(chunk)
    body = parse_json(b"".join(chunks))
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    return body


def _hold(request: web.Request, path: str, bodies: list[dict[str, Any]], environment: str) -> None:
    """Keep checked reports for the upstream, under the token the SDK sent them with; past
    the bound (``--max-held-usage``) a 503: the sender keeps its counts and tries again,
    rather than being told yes and losing them."""
    edge = request.app[EDGE]
    if not edge.forwarder.room_for(len(bodies)):
        raise ServiceUnavailable(
            f"this edge holds {edge.forwarder.capacity} usage reports for the upstream "
            "already: send this report again later",
            retry_after=edge.config.metrics_interval,
        )
    token = request.headers.get("Authorization", "")
    for body in bodies:
        edge.forwarder.hold(HeldReport(path, token, body, environment))


def _check_registration(edge: Edge, body: dict[str, Any], environment: str, what: str) -> None:
    """The server's checks of a registration (`Service.instances.checked_instance`)."""
    registration = read_registration(body, what)
    edge.checks.instances.checked_instance(
        registration.app_name,
        registration.instance_id or "unknown",
        environment=environment,
        sdk_version=registration.sdk_version,
        strategies=registration.strategies,
        started=registration_started(registration.started),
        interval=round(registration.interval),
    )


def _check_metrics(edge: Edge, body: dict[str, Any], environment: str) -> None:
    """The server's checks of a metrics report (`Service.metrics.check_report`)."""
    report = read_metrics_body(body)
    edge.checks.metrics.check_report(
        report.app_name,
        report.instance_id or "unknown",
        environment,
        report.start or dt.datetime.now(dt.UTC),
        report.toggles,
        sdk_version=report.sdk_version,
    )


@routes.post("/api/client/register")
async def register(request: web.Request) -> web.Response:
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    assert token.snapshot is not None
    body = await _json_object(request, MAX_USAGE_BODY_BYTES)
    what = "the registration is missing fields or has wrong types"
    _check_registration(edge, body, token.snapshot.scope.environment, what)
    _hold(request, "/client/register", [body], token.snapshot.scope.environment)
    return web.Response(status=202)


@routes.post("/api/client/metrics")
async def metrics(request: web.Request) -> web.Response:
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    assert token.snapshot is not None
    body = await _json_object(request, MAX_USAGE_BODY_BYTES)
    _check_metrics(edge, body, token.snapshot.scope.environment)
    _hold(request, "/client/metrics", [body], token.snapshot.scope.environment)
    return web.Response(status=202)


@routes.post("/api/client/metrics/bulk")
async def metrics_bulk(request: web.Request) -> web.Response:
    """What a downstream edge (Unleash Edge, or `flagcore edge`) forwards: Unleash's bulk
    body, read strictly (`flagcore.wire.read_bulk_metrics`), every row of the token's
    environment; held in parts of at most `BULK_POST_BYTES` and forwarded like the rest."""
    edge = request.app[EDGE]
    token = await edge.client_token(request.headers.get("Authorization"))
    assert token.snapshot is not None
    body = await _json_object(request, MAX_USAGE_BODY_BYTES)
    environment = token.snapshot.scope.environment
    parts = split_bulk(read_bulk_metrics(body, environment).body(), BULK_POST_BYTES)
    _hold(request, BULK_PATH, parts, environment)
    return web.Response(status=202)


@routes.post("/edge/validate")
async def edge_validate(request: web.Request) -> web.Response:
    """Unleash Edge's question to the edge in front of it: which of these tokens are valid
    (client or frontend tokens the upstream accepts), each with its type, environment and
    projects. No token needed, as at Unleash; at most `MAX_VALIDATE_TOKENS` a request, and
    each is checked as an SDK's token is (once, then from memory)."""
    secrets = read_token_strings(await _json_object(request, MAX_VALIDATE_BODY_BYTES))
    edge = request.app[EDGE]
    valid = []
    for secret in dict.fromkeys(secrets):
        checked = await edge.validated(secret)
        if checked is not None:
            valid.append(checked)
    return web.json_response(write_answer(ValidatedEdgeTokens(tuple(valid))))


# --- the Frontend API ------------------------------------------------------------------


def _query_context(request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    fields: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for key, value in request.query.items():
        if key.startswith("properties[") and key.endswith("]"):
            name, into = key[len("properties[") : -1], properties
        else:
            name, into = key, fields
        if name in into:
            raise InvalidInput(
                f"the query gives {key[:100]!r} more than once",
                [ErrorDetail("given more than once", f"/query/{key[:100]}")],
            )
        into[name] = value
    return fields, properties


async def _body_context(request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    if not request.body_exists:
        return {}, {}
    body = await _json_object(request, MAX_CONTEXT_BODY_BYTES)
    return context_parts(structure_body(body, ContextBody))


def _query_path(name: str) -> str:
    if name.startswith("properties."):
        return f"/query/properties[{name[len('properties.') :][:100]}]"
    return f"/query/{name[:100]}"


def _body_path(name: str) -> str:
    return f"$.context.{name[:100]}"


async def _frontend_answer(
    request: web.Request, fields: dict[str, Any], properties: dict[str, Any], path: Any
) -> web.Response:
    edge = request.app[EDGE]
    scope: Scope = (await edge.frontend_token(request.headers.get("Authorization"))).scope
    defaults = {"environment": scope.environment}
    if request.remote:
        defaults["remoteAddress"] = request.remote
    context = frontend_context(fields, path, defaults, properties)
    return answer_with_etag(request, edge.frontend_view(scope).frontend_body(context))


@routes.get("/api/frontend")
async def frontend_get(request: web.Request) -> web.Response:
    fields, properties = _query_context(request)
    return await _frontend_answer(request, fields, properties, _query_path)


@routes.post("/api/frontend")
async def frontend_post(request: web.Request) -> web.Response:
    fields, properties = await _body_context(request)
    return await _frontend_answer(request, fields, properties, _body_path)


@routes.post("/api/frontend/client/metrics")
async def frontend_metrics(request: web.Request) -> web.Response:
    edge = request.app[EDGE]
    token = await edge.frontend_token(request.headers.get("Authorization"))
    body = await _json_object(request, MAX_USAGE_BODY_BYTES)
    _check_metrics(edge, body, token.scope.environment)
    _hold(request, "/frontend/client/metrics", [body], token.scope.environment)
    return web.Response(status=200)


@routes.post("/api/frontend/client/register")
async def frontend_register(request: web.Request) -> web.Response:
    edge = request.app[EDGE]
    token = await edge.frontend_token(request.headers.get("Authorization"))
    body = await _json_object(request, MAX_USAGE_BODY_BYTES)
    if "appName" not in body:
        raise InvalidInput(
            "appName is required", [ErrorDetail("appName is required: a string", "$.appName")]
        )
    # Browser SDKs send less: the server's defaults for the check, the body forwarded as sent.
    filled = {"interval": 0, "strategies": [], **body}
    if filled.get("started") is None:
        filled["started"] = dt.datetime.now(dt.UTC).isoformat()
    _check_registration(edge, filled, token.scope.environment, "the registration has wrong types")
    _hold(request, "/frontend/client/register", [body], token.scope.environment)
    return web.Response(status=200)


# --- OFREP ------------------------------------------------------------------------------


def _finder(request: web.Request, scope: Scope) -> ViewFinder:
    """The server's OFREP handlers' `ViewFinder`, over the edge's view of ``scope``."""
    edge = request.app[EDGE]

    async def find(
        request: web.Request, fields: dict[str, Any]
    ) -> tuple[FrontendView, dict[str, str]]:
        defaults = {"environment": scope.environment}
        if request.remote:
            defaults["remoteAddress"] = request.remote
        return edge.frontend_view(scope), defaults

    return find


def _ofrep_secret(request: web.Request) -> str | None:
    return request.headers.get("Authorization") or request.headers.get("X-API-Key")


@routes.post("/ofrep/v1/evaluate/flags/{key}")
async def ofrep_one(request: web.Request) -> web.Response:
    scope, _frontend = await request.app[EDGE].ofrep_scope(_ofrep_secret(request))
    return await ofrep_flag(request, request.match_info["key"], _finder(request, scope))


@routes.post("/ofrep/v1/evaluate/flags")
async def ofrep_all(request: web.Request) -> web.Response:
    scope, frontend = await request.app[EDGE].ofrep_scope(_ofrep_secret(request))
    return await ofrep_flags(request, _finder(request, scope), off_flags=not frontend)


# --- operations ------------------------------------------------------------------------


@routes.get("/health")
async def health(request: web.Request) -> web.Response:
    return web.json_response({"health": "GOOD"})


@routes.get("/ready")
async def ready(request: web.Request) -> web.Response:
    """200 while there are flags to serve (the upstream may be away: ``upstream`` says so);
    503 before the first data."""
    edge = request.app[EDGE]
    upstream = (
        "offline"
        if edge.upstream is None
        else {None: "unknown", True: "reachable", False: "unreachable"}[edge.upstream_up]
    )
    age = edge.oldest_data_age()
    body: dict[str, Any] = {
        "health": "GOOD" if edge.has_data() else "BAD",
        "upstream": upstream,
        "dataAgeSeconds": None if age is None else round(age, 3),
        "usageHeld": edge.forwarder.held,
        "usageDropped": edge.forwarder.dropped,
    }
    if edge.config.offline and edge.bootstrap_error is not None:
        body["bootstrapError"] = edge.bootstrap_error
    if edge.last_contact is not None:
        body["lastUpstreamContactSecondsAgo"] = round(time.time() - edge.last_contact, 3)
    if not edge.has_data():
        body["message"] = "no flags yet: the upstream has not answered and no snapshot was kept"
    return web.json_response(body, status=200 if edge.has_data() else 503)


@routes.get("/internal-backstage/prometheus")
async def prometheus(request: web.Request) -> web.Response:
    text = exposition(request.app[EDGE], request.app[REQUESTS])
    return web.Response(text=text, content_type="text/plain", charset="utf-8")


async def _unmatched(request: web.Request) -> web.Response:
    return error_response(404, "NotFoundError", f"no route {request.method} {request.path[:200]}")


def create_edge_app(edge: Edge) -> web.Application:
    """The app over ``edge``; the caller starts and stops the edge around it."""
    app = web.Application(client_max_size=MAX_USAGE_BODY_BYTES)
    app[EDGE] = edge
    app[REQUESTS] = Counter()
    for route in routes:
        assert isinstance(route, web.RouteDef)
        app.router.add_route(route.method, route.path, _guarded(route.handler))
    app.router.add_route("*", "/{tail:.*}", _guarded(_unmatched))
    return app
