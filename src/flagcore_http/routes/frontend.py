"""Unleash's Frontend API: every flag on for one context, evaluated here, for browsers.

``GET /api/frontend`` reads the context from the query (``userId=…``,
``properties[name]=…``), ``POST /api/frontend`` from ``{"context": {...}}``. Only
frontend tokens are accepted (as in Unleash); their projects and environment scope the
answer. Each scope's flags are compiled once per store revision (`FrontendViews`), so a
write shows on the very next request. The ETag is a hash of the answer itself: it changes
only when what this caller sees changes, and says nothing about other flags.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import OrderedDict
from typing import Any, Final

from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import (
    ErrorDetail,
    InvalidInput,
    LimitExceeded,
    ServiceUnavailable,
    StorageError,
)
from flagcore.service import (
    UNSCOPED_ENVIRONMENT,
    FrontendView,
    build_frontend_view,
    frontend_context,
)
from flagcore.wire import (
    FRONTEND_METRICS_SCHEMA,
    FRONTEND_REGISTRATION_SCHEMA,
    FrontendToggles,
    read_registration,
    registration_started,
)
from flagcore_http import shapes
from flagcore_http.bodies import read_json, structure_body
from flagcore_http.body_size import oversized
from flagcore_http.calls import call, service
from flagcore_http.context_sampling import CONTEXT_SAMPLER
from flagcore_http.contract import documented
from flagcore_http.keys import CACHE, CONFIG, REVISION, TOKEN
from flagcore_http.rate_limits import RATE_LIMITS, metrics_row_budget, refusal
from flagcore_http.routes import client
from flagcore_http.wire import ContextBody

__all__ = [
    "FRONTEND_VIEWS",
    "MAX_CONTEXT_BODY_BYTES",
    "FrontendViews",
    "answer_with_etag",
    "caller_address",
    "context_parts",
    "frontend_scope",
    "routes",
    "view_for",
]

routes = web.RouteTableDef()

# A context body is a few hundred bytes; the whole server's 1 MB limit is for admin imports.
MAX_CONTEXT_BODY_BYTES: Final = 64 * 1024
_VIEWS_KEPT = 64  # scopes (environment, projects) compiled at once; tokens name few


class FrontendViews:
    """The compiled `FrontendView` of each scope at the store's current revision, LRU."""

    def __init__(self, capacity: int = _VIEWS_KEPT) -> None:
        self.capacity = capacity
        self._views: OrderedDict[tuple[str, tuple[str, ...] | None], FrontendView] = OrderedDict()

    def get(self, key: tuple[str, tuple[str, ...] | None], revision: int) -> FrontendView | None:
        view = self._views.get(key)
        if view is None or view.revision != revision:
            return None
        self._views.move_to_end(key)
        return view

    def put(self, key: tuple[str, tuple[str, ...] | None], view: FrontendView) -> None:
        self._views[key] = view
        self._views.move_to_end(key)
        while len(self._views) > self.capacity:
            self._views.popitem(last=False)


FRONTEND_VIEWS = web.AppKey("frontend_views", FrontendViews)


def frontend_scope(
    request: web.Request, asked_environment: Any = None
) -> tuple[str, tuple[str, ...] | None]:
    """The environment and projects a caller sees: its token's; without auth, the
    context's environment (or development) and every project."""
    token: ApiToken | None = request.get(TOKEN)
    if token is not None:
        projects = None if "*" in token.projects else token.projects
        return token.environment or UNSCOPED_ENVIRONMENT, projects
    if isinstance(asked_environment, str) and asked_environment:
        return asked_environment, None
    return UNSCOPED_ENVIRONMENT, None


async def view_for(
    request: web.Request, environment: str, projects: tuple[str, ...] | None
) -> FrontendView:
    """The compiled flags of the scope at the current revision (built on the store worker,
    once however many requests ask together)."""
    cache = request.app[CACHE]
    revision: int | None = request.get(REVISION)
    if revision is None:
        revision = cache.current_revision(service(request))
    views = request.app[FRONTEND_VIEWS]
    key = (environment, projects)
    view = views.get(key, revision)
    if view is None:
        view = await cache.once(
            ("frontend-view", key, revision),
            lambda: call(
                request,
                build_frontend_view,
                service(request),
                environment,
                projects,
                revision,
                urgent=True,
            ),
        )
        if cache.revision == revision:
            views.put(key, view)
    return view


def caller_address(request: web.Request) -> str | None:
    """The caller's IP address: the connection's, or, behind a trusted proxy
    (``FLAGCORE_TRUST_FORWARDED_FOR``), the last ``X-Forwarded-For`` entry: the one that
    proxy appended (entries before it are whatever the client wrote)."""
    if request.app[CONFIG].trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last and len(last) <= 64:
            return last
    return request.remote


def _etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _etag_matches(header: str, etag: str) -> bool:
    return header == etag or any(
        part.strip().removeprefix("W/") == etag for part in header.split(",", 64)
    )


def answer_with_etag(request: web.Request, text: str) -> web.Response:
    """200 with ``text`` and its ETag, or 304 when the caller already has it."""
    body = text.encode("utf-8")
    etag = _etag_of(body)
    header = request.headers.get("If-None-Match")
    if header and _etag_matches(header, etag):
        return web.Response(status=304, headers={"ETag": etag})
    return web.Response(
        body=body,
        headers={"ETag": etag, "Content-Type": "application/json; charset=utf-8"},
    )


def _query_context(request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """Top-level fields and ``properties[name]`` values from the query; a name given
    twice is refused (which value would count?)."""
    fields: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    if not request.query_string:
        return fields, properties
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
    length = request.content_length
    if length is not None and length > MAX_CONTEXT_BODY_BYTES:
        raise LimitExceeded(
            f"a context body has at most {MAX_CONTEXT_BODY_BYTES} bytes",
            "context_bytes",
            MAX_CONTEXT_BODY_BYTES,
        )
    data = await read_json(request, required=False)
    if data is None:
        return {}, {}
    return context_parts(structure_body(data, ContextBody))


def context_parts(body: ContextBody) -> tuple[dict[str, Any], dict[str, Any]]:
    """A context body as (the fields set, the explicit ``properties``): ``properties``
    must be an object (null: none), a field set to null is not set."""
    context = body.context
    properties = context.get("properties", {})
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise InvalidInput(
            "context.properties must be an object",
            [ErrorDetail("not an object", "$.context.properties")],
        )
    fields = {
        key: value for key, value in context.items() if key != "properties" and value is not None
    }
    return fields, properties


def _context(
    request: web.Request,
    fields: dict[str, Any],
    properties: dict[str, Any],
    environment: str,
    path: Any,
) -> dict[str, Any]:
    defaults = {"environment": environment}
    address = caller_address(request)
    if address:
        defaults["remoteAddress"] = address
    context = frontend_context(fields, path, defaults, properties)
    request.app[CONTEXT_SAMPLER].offer(environment, context)  # the preview's sample
    return context


def _query_path(name: str) -> str:
    if name.startswith("properties."):
        return f"/query/properties[{name[len('properties.') :][:100]}]"
    return f"/query/{name[:100]}"


def _body_path(name: str) -> str:
    return f"$.context.{name[:100]}"


@routes.get("/api/frontend")
@documented({200: FrontendToggles, 304: None}, query=shapes.CONTEXT_QUERY)
async def frontend_get(request: web.Request) -> web.Response:
    """The flags on for the context in the query (``properties[name]=…`` for properties)."""
    fields, properties = _query_context(request)
    environment, projects = frontend_scope(request, fields.get("environment"))
    context = _context(request, fields, properties, environment, _query_path)
    view = await view_for(request, environment, projects)
    return answer_with_etag(request, view.frontend_body(context))


@routes.post("/api/frontend")
@documented({200: FrontendToggles, 304: None}, body=ContextBody, body_required=False)
async def frontend_post(request: web.Request) -> web.Response:
    """The flags on for the context in ``{"context": {...}}``."""
    fields, properties = await _body_context(request)
    environment, projects = frontend_scope(request, fields.get("environment"))
    context = _context(request, fields, properties, environment, _body_path)
    view = await view_for(request, environment, projects)
    return answer_with_etag(request, view.frontend_body(context))


@routes.post("/api/frontend/client/metrics")
@documented({200: None}, body=FRONTEND_METRICS_SCHEMA, errors=(429,))
async def frontend_metrics(request: web.Request) -> web.Response:
    """Counted as for server SDKs (the token's projects and environment); 200 as Unleash.
    The token ships in every browser bundle, so what it may add to the store is bounded
    per token as well as per (token, address) (`rate_limits.metrics_row_budget`)."""
    refused = refusal(request, request.app[RATE_LIMITS].frontend_metrics)  # before the body
    refused = refused or oversized(request, request.app[CONFIG].sdk_usage_max_body_bytes)
    if refused is not None:
        return refused
    # Counted per flag: a browser can only have been given the variant names the scope's
    # flags define, so other names (up to 100 a flag, each a stored key) are dropped.
    # While the store cannot say (within usage_write_wait), the variants are kept
    # unfiltered: bounded by the usage buffer, and filtered by the store when written.
    known_variants = None
    with contextlib.suppress(StorageError, ServiceUnavailable, TimeoutError):
        wait = request.app[CONFIG].usage_write_wait
        view = await asyncio.wait_for(
            asyncio.shield(view_for(request, *frontend_scope(request))), wait
        )
        known_variants = view.variant_names
    await client.record_metrics(request, frontend=True, known_variants=known_variants)
    return web.Response(status=200)


@routes.post("/api/frontend/client/register")
@documented({200: None}, body=FRONTEND_REGISTRATION_SCHEMA, errors=(429,))
async def frontend_register(request: web.Request) -> web.Response:
    """Browser SDKs register with less than server SDKs: ``appName`` is required; a
    missing ``interval``, ``started`` or ``strategies`` means 0, now and none."""
    refused = refusal(request, request.app[RATE_LIMITS].frontend_register)  # before the body
    refused = refused or oversized(request, request.app[CONFIG].sdk_usage_max_body_bytes)
    if refused is not None:
        return refused
    body = await read_json(request, max_bytes=request.app[CONFIG].sdk_usage_max_body_bytes)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    if "appName" not in body:
        raise InvalidInput(
            "appName is required", [ErrorDetail("appName is required: a string", "$.appName")]
        )
    filled = {"interval": 0, "strategies": [], **body}
    if filled.get("started") is None:
        filled["started"] = service(request).clock().isoformat()
    # The same checks as a server SDK's registration, once the defaults are in.
    registration = read_registration(filled, "the registration has wrong types")
    environment, _projects = frontend_scope(request)
    instance = service(request).instances.checked_instance(
        registration.app_name,
        registration.instance_id or "unknown",
        environment=environment,
        sdk_version=registration.sdk_version,
        strategies=registration.strategies,
        started=registration_started(registration.started),
        interval=round(registration.interval),
    )
    # A new instance is a row: within the same budget as the token's metrics posts.
    budget = metrics_row_budget(request, 1, frontend=True)
    created = False
    try:
        created = await client.save_registration(request, instance, create=budget.rows != 0)
    finally:
        budget.spent(int(created))
    return web.Response(status=200)
