"""The SDK API: client features (cached per revision, ETag/304, gzip), register, metrics."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from aiohttp import web

from flagcore.entities import ApiToken, ClientInstance, Tag
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import ClientFeatures
from flagcore.service import (
    UNSCOPED_ENVIRONMENT,
    ClientQuery,
    Service,
    client_features_format,
    known_variants_only,
)
from flagcore.wire import (
    CLIENT_FLAG_SCHEMA,
    METRICS_SCHEMA,
    REGISTRATION_SCHEMA,
    ClientFeaturesAnswer,
    ImpactMetric,
    read_impact_metrics,
    read_metrics_body,
    read_registration,
    registration_started,
    unstructure_client_features,
    unstructure_flag,
)
from flagcore_http import shapes
from flagcore_http.bodies import read_json
from flagcore_http.body_size import oversized
from flagcore_http.calls import call, service
from flagcore_http.client_cache import (
    AnswerKey,
    ClientCache,
    FastAnswer,
    RenderedPayload,
    query_hash,
)
from flagcore_http.config import ServerConfig
from flagcore_http.contract import documented
from flagcore_http.errors import Handler
from flagcore_http.keys import CACHE, CONFIG, REVISION, SERVICE, TOKEN
from flagcore_http.logs import MAX_APP_NAME_LENGTH, REQUEST_ID_HEADER, request_id
from flagcore_http.metric_names import METRIC_NAMES
from flagcore_http.metrics import CLIENT_CLOSED, METRICS, recorder
from flagcore_http.rate_limits import (
    RATE_LIMITS,
    allows_new_instance,
    metrics_row_budget,
    refusal,
)
from flagcore_http.request_log import REQUEST_LOG, SLOW_SECONDS, CountedResponse
from flagcore_http.usage_buffer import USAGE_BUFFER

__all__ = [
    "record_metrics",
    "routes",
    "save_registration",
    "sdk_scope",
    "with_fast_path",
]

routes = web.RouteTableDef()
_impact_log = logging.getLogger("flagcore.release_plans")

POLL_ROUTE = "/api/client/features"  # the path every SDK polls (the fast path's)
# SDK identity headers longer than this are not tracked (the request is still served):
# real app names, instance ids and SDK versions are far shorter.
MAX_TRACKED_HEADER_LENGTH = 255
# A namePrefix longer than any flag name matches nothing; no need to read all of it.
_MAX_PREFIX_LENGTH = 255


def _spec_version(request: web.Request) -> int:
    """Format 2 (segment ids + a segments list) for SDKs speaking spec 4.2.0 or later;
    format 1 (version 1: segments inlined, legacy keys) for every other client."""
    return client_features_format(request.headers.get("Unleash-Client-Spec"))


def _tags(request: web.Request) -> tuple[Tag, ...]:
    if not request.query_string:
        return ()
    tags = []
    for raw in request.query.getall("tag[]", []) + request.query.getall("tag", []):
        kind, colon, value = raw.partition(":")
        if colon and kind and value:
            tags.append(Tag(kind, value))
        else:
            # Not type:value, so no flag can carry it: it matches nothing (200, never 400).
            tags.append(Tag("", raw))
    return tuple(sorted(set(tags)))


def sdk_scope(request: web.Request) -> tuple[str, tuple[str, ...] | None]:
    """The environment and projects: a client token's scope wins over query parameters."""
    token: ApiToken | None = request.get(TOKEN)
    query = request.query if request.query_string else None
    asked = tuple(query.getall("project", []) + query.getall("project[]", [])) if query else ()
    if token is not None:
        projects: tuple[str, ...] | None = token.projects
        if "*" in token.projects:
            projects = tuple(sorted(set(asked))) or None
        return token.environment or UNSCOPED_ENVIRONMENT, projects
    environment = request.query.get("environment", UNSCOPED_ENVIRONMENT)
    return environment, tuple(sorted(set(asked))) or None


async def _revision(request: web.Request) -> int:
    cache = request.app[CACHE]
    known: int | None = request.get(REVISION)
    if known is not None:
        return known
    return cache.current_revision(service(request))


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    if header == etag:  # what SDKs send: the ETag they were given, as it was given
        return True
    return any(part.strip().removeprefix("W/") == etag for part in header.split(","))


def _note_instance(request: web.Request, environment: str) -> None:
    """Remember which SDK instances poll (headers are read case-insensitively).

    Nothing is written here: the instance joins a bounded batch that the server's upkeep
    task writes in one transaction (`flagcore_http.calls.store_upkeep`). An instance is
    noted at most once per write interval; over-long headers are not tracked at all, nor
    new instances past the token's limit a minute (`rate_limits.allows_new_instance`).
    """
    app = request.app
    _note(request, environment, app[CACHE], app[CONFIG], app[SERVICE], request.get(TOKEN))


def _note(
    request: web.Request,
    environment: str,
    cache: ClientCache,
    config: ServerConfig,
    service_: Service,
    token: ApiToken | None,
) -> str | None:
    """Track the polling SDK instance; returns the application name it sent (for the
    request log's summary), None when it sent none."""
    headers = request.headers
    app_name = headers.get("UNLEASH-APPNAME") or headers.get("SERVICE-APPNAME")
    if not app_name:
        return None
    instance = headers.get("UNLEASH-INSTANCEID") or headers.get("SERVICE-INSTANCEID") or "unknown"
    sdk_version = headers.get("UNLEASH-SDK")
    if max(len(app_name), len(instance), len(sdk_version or "")) > MAX_TRACKED_HEADER_LENGTH:
        return app_name
    now = time.monotonic()
    key = (app_name, instance)
    if cache.wants_instance(key, now, config.instance_write_interval):
        if key not in cache.seen_instances and not allows_new_instance(request, token):
            return app_name  # too many new instances from this token a minute: not tracked
        last_seen = service_.clock()
        cache.note_instance(
            ClientInstance(app_name, instance, environment, sdk_version, last_seen=last_seen), now
        )
    return app_name


def _render(
    request: web.Request,
    environment: str,
    query: ClientQuery | None,
    version: int,
    revision: int,
) -> RenderedPayload:
    """The payload of ``query`` (None: a query that matches nothing) in ``environment``."""
    echo: dict[str, Any] = {"environment": environment, "inlineSegmentConstraints": version < 2}
    if query is None:
        snapshot = ClientFeatures()
        echo["matchesNothing"] = True
    else:
        try:
            snapshot = service(request).client.client_features(
                query.environment,
                projects=query.projects,
                tags=query.tags or None,
                name_prefix=query.name_prefix,
            )
        except NotFound:  # an environment deleted since the vocabulary was read
            snapshot = ClientFeatures()
        if query.projects:
            echo["project"] = list(query.projects)
        if query.tags:
            echo["tag"] = [[tag.type, tag.value] for tag in query.tags]
        if query.name_prefix:
            echo["namePrefix"] = query.name_prefix
    payload = unstructure_client_features(
        snapshot, version=version, pause_gc=request.app[CONFIG].gc_pause
    )
    # The hash covers the echoed query, inlineSegmentConstraints included, so the two
    # forms never share an ETag; and the payload's version, so an ETag given for format 1
    # before it said version 1 (with its legacy keys) is no 304 for the body of today.
    digest = query_hash((payload["version"], sorted(echo.items())))
    # Unleash's shape, "<queryHash>:<revisionId>:v1".
    etag = f'"{digest}:{revision}:v1"'
    payload["query"] = echo
    payload["meta"] = {"revisionId": revision, "etag": etag, "queryHash": digest}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return RenderedPayload(body, etag)


def _cache_key(environment: str, query: ClientQuery | None, version: int) -> tuple[Any, ...]:
    """The payload cache's key: shaped like the asked key, so a query that is already narrow
    (the common case) is found by its first lookup, before any narrowing."""
    if query is None:
        return (environment, None, (), None, version, "matches nothing")
    return (environment, query.projects, query.tags, query.name_prefix, version)


@routes.get("/api/client/features")
@documented(
    {200: ClientFeaturesAnswer, 304: None}, query=shapes.SDK_QUERY, headers=shapes.SDK_HEADERS
)
async def client_features(request: web.Request) -> web.StreamResponse:
    version = _spec_version(request)
    tags = _tags(request)
    name_prefix = (request.query.get("namePrefix") or None) if request.query_string else None
    environment, projects = sdk_scope(request)
    revision = await _revision(request)
    cache = request.app[CACHE]
    rendered = cache.payload_at((environment, projects, tags, name_prefix, version), revision)
    if rendered is None:
        # Filter values that match nothing are dropped, so junk shares one entry.
        vocabulary = await cache.vocabulary_at(
            revision,
            lambda: call(request, service(request).client.client_vocabulary, urgent=True),
        )
        query = None
        if name_prefix is None or len(name_prefix) <= _MAX_PREFIX_LENGTH:
            query = vocabulary.narrow(ClientQuery(environment, projects, tags, name_prefix))
        rendered = await cache.payload(
            _cache_key(environment, query, version),
            revision,
            lambda: call(
                request, _render, request, environment, query, version, revision, urgent=True
            ),
        )
    _note_instance(request, environment)
    # Unleash's hint to switch to /api/client/streaming goes in the fetch-mode header.
    fetch_mode = "streaming" if request.app[CONFIG].sdk_fetch_mode == "streaming" else None
    answer = FastAnswer(environment, rendered, fetch_mode, request.get(TOKEN))
    # The next such request takes the fast path.
    cache.remember_answer(_answer_key(request.headers, request), answer, revision)
    if _etag_matches(request.headers.get("If-None-Match"), answer.etag):
        return web.Response(status=304, headers=answer.not_modified)
    body, headers = await _full_body(request, answer, cache)
    return web.Response(body=body, headers=headers)


def _answer_key(headers: Mapping[str, str], request: web.Request) -> AnswerKey:
    """What a repeated poll is recognised by (`flagcore_http.client_cache.AnswerKey`)."""
    return (
        headers.get("Authorization"),
        headers.get("Unleash-Client-Spec"),
        request.query_string,
    )


async def _full_body(
    request: web.Request, answer: FastAnswer, cache: ClientCache
) -> tuple[bytes, Mapping[str, str]]:
    """The 200's body (gzipped when asked) and headers of ``answer``, built once per
    answer; the caller has checked ``If-None-Match`` (the 304) first."""
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        return await answer.rendered.gzipped(cache.compressor), answer.gzipped
    return answer.rendered.body, answer.full


def with_fast_path(route: web.RouteDef, handler: Handler, app: web.Application) -> Handler:
    """``handler``, answering repeated SDK polls of /api/client/features before the full path.

    ``handler`` is the full path (authentication included, see `flagcore_http.errors.guarded`);
    what it answered for a request's `flagcore_http.client_cache.AnswerKey` at the current
    revision is kept (`FastAnswer`), and a later request with the same key is answered from
    it. Per request the fast path does: the store's revision check, three header reads and a
    dictionary lookup, SDK instance tracking (two header reads when none is sent), the ETag
    comparison and the response (docs/performance.md). Any other route is returned as given.
    """
    if route.method != "GET" or route.path != POLL_ROUTE:
        return handler
    cache, config, service_ = app[CACHE], app[CONFIG], app[SERVICE]
    full_path = handler  # counted and given a request id by `flagcore_http.metrics.observed`
    record = recorder(app[METRICS].requests, route.method, route.path)
    clock = time.perf_counter
    # The request log's summary (``--access-log default``): a poll answered here is counted
    # here and answered as a `CountedResponse`, which the access-log hook passes over.
    summary = app[REQUEST_LOG].routine_summary()
    count = None if summary is None else summary.count
    slow = SLOW_SECONDS

    @functools.wraps(full_path)  # the OpenAPI document names the route by its handler
    async def client_features_fast_path(request: web.Request) -> web.StreamResponse:
        started = clock()
        headers = request.headers
        try:
            cache.current_revision(service_)  # drops every answer of an older revision
            answer = cache.answers.get(_answer_key(headers, request))
        except Exception:  # the store could not be asked: the full path says why, as JSON
            answer = None
        if answer is None:
            return await full_path(request)
        cache.lookups.hits += 1  # answered from what was rendered: a hit for the metrics
        answer_headers: Mapping[str, str]
        try:
            app_name = _note(request, answer.environment, cache, config, service_, answer.token)
            if _etag_matches(headers.get("If-None-Match"), answer.etag):  # most polls
                status, body, answer_headers = 304, None, answer.not_modified
            else:
                status = 200
                body, answer_headers = await _full_body(request, answer, cache)
        except asyncio.CancelledError:  # the client went away before its answer
            record("GET", CLIENT_CLOSED, clock() - started)
            raise
        except Exception:  # never a bare 500: the full path answers with the JSON error shape
            return await full_path(request)
        elapsed = clock() - started
        if count is not None and elapsed < slow:
            count("GET", POLL_ROUTE, status, app_name[:MAX_APP_NAME_LENGTH] if app_name else None)
            response: web.Response = CountedResponse(
                status=status, body=body, headers=answer_headers
            )
        else:  # the access log sees it (``--access-log all``, or a slow answer)
            response = web.Response(status=status, body=body, headers=answer_headers)
        # What `observed` does for the full path, inline: no extra layer per poll.
        response.headers[REQUEST_ID_HEADER] = request_id(headers.get(REQUEST_ID_HEADER))
        record("GET", status, elapsed)
        return response

    return client_features_fast_path


@routes.get("/api/client/features/{name}")
@documented(
    {200: dict(CLIENT_FLAG_SCHEMA)}, query=shapes.SDK_SCOPE_QUERY, headers=shapes.SDK_HEADERS
)
async def client_feature(request: web.Request) -> web.Response:
    version = _spec_version(request)
    environment, projects = sdk_scope(request)
    name = request.match_info["name"]
    try:
        snapshot = await call(
            request, service(request).client.client_feature, environment, name, projects=projects
        )
    except NotFound:  # an environment that does not exist has no flags
        snapshot = ClientFeatures()
    if not snapshot.features:
        raise NotFound(f"Could not find feature flag {name}")
    segments = None if version >= 2 else {s.id: s for s in snapshot.segments}
    return web.json_response(unstructure_flag(snapshot.features[0], segments))


async def _json_object(request: web.Request) -> dict[str, Any]:
    body = await read_json(request, max_bytes=request.app[CONFIG].sdk_usage_max_body_bytes)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    return body


@routes.post("/api/client/register")
@documented({202: None}, body=REGISTRATION_SCHEMA, errors=(429,))
async def register(request: web.Request) -> web.Response:
    refused = refusal(request, request.app[RATE_LIMITS].register)  # before the body is read
    refused = refused or oversized(request, request.app[CONFIG].sdk_usage_max_body_bytes)
    if refused is not None:
        return refused
    body = await _json_object(request)
    registration = read_registration(body, "the registration is missing fields or has wrong types")
    environment, _projects = sdk_scope(request)
    instance = service(request).instances.checked_instance(
        registration.app_name,
        registration.instance_id or "unknown",
        environment=environment,
        sdk_version=registration.sdk_version,
        strategies=registration.strategies,
        started=registration_started(registration.started),
        interval=round(registration.interval),
    )
    await save_registration(request, instance, create=True)
    return web.Response(status=202)


async def save_registration(
    request: web.Request, instance: ClientInstance, *, create: bool
) -> bool:
    """Hold a checked registration for the next batched write
    (`flagcore_http.usage_buffer`); True if it may make a row not known to be stored
    (the caller's budget). Merged per (app, instance): a flood of them is one write."""
    return request.app[USAGE_BUFFER].hold_instance(instance, create=create)


async def record_impact(
    request: web.Request,
    environment: str,
    projects: tuple[str, ...] | None,
    metrics: tuple[ImpactMetric, ...],
) -> None:
    """Impact metrics written in their own unit of work (not behind the answer: a
    safeguard reads them); a store outage drops them, logged, and the answer stays the
    SDK's 202 (docs/release-plans.md)."""
    try:
        await call(
            request,
            service(request).impact_metrics.record_sdk_impact_metrics,
            environment,
            metrics,
            projects=projects,
        )
    except FlagcoreError as error:
        _impact_log.warning("impact metrics not kept: %s", error.message)


@routes.post("/api/client/metrics")
@documented({202: None}, body=METRICS_SCHEMA, errors=(429,))
async def metrics(request: web.Request) -> web.Response:
    refused = refusal(request, request.app[RATE_LIMITS].metrics)  # before the body is read
    refused = refused or oversized(request, request.app[CONFIG].sdk_usage_max_body_bytes)
    if refused is not None:
        return refused
    await record_metrics(request)
    return web.Response(status=202)


def _reported_sdk(request: web.Request, sdk_version: Any) -> Any:
    """The SDK's version as a metrics report gives it: the body's ``sdkVersion``, else the
    ``Unleash-SDK`` header browser SDKs send (as Unleash records it); an over-long header
    is not kept rather than refusing the report for it."""
    if sdk_version is not None:
        return sdk_version
    header = request.headers.get("Unleash-SDK")
    return header if header is not None and len(header) <= MAX_TRACKED_HEADER_LENGTH else None


async def record_metrics(
    request: web.Request,
    *,
    frontend: bool = False,
    known_variants: Callable[[str], Collection[str]] | None = None,
) -> None:
    """Read a metrics report and count it (server SDKs here, browser SDKs in frontend.py).

    What it may add to the store is bounded by the caller's row budget
    (`metrics_row_budget`); a bucket outside the service's window is dropped. Either way
    the answer is the SDK's usual 2xx (a 4xx would only make it send the bucket again),
    counted in ``flagcore_sdk_metrics_dropped``. With ``known_variants`` (browser SDKs),
    only the variant names it gives a flag are counted. The report is checked here, on the
    loop, then held and written behind the answer in a merged batch
    (`flagcore_http.usage_buffer`): a post never waits for the store nor fails for want
    of it."""
    raw = await _json_object(request)
    body = read_metrics_body(raw)
    # Unleash 8's impact metrics (issue 32): read before anything is counted, so a bad
    # one is a 400 and the whole report is not counted.
    impact = None if frontend else body.impact_metrics
    impact_metrics = () if impact is None else read_impact_metrics(impact)
    toggles = body.toggles
    start = body.start or dt.datetime.now(dt.UTC)
    # Only flags in the token's projects are counted (all projects for a "*" token).
    environment, projects = sdk_scope(request)
    svc = service(request)
    if len(toggles) <= svc.limits.metrics_toggles_per_post:  # else the service says 400
        # Names that are no flag would be dropped anyway: drop them now, unread, with a
        # set lookup each (a report of made-up names then costs no counting and no query).
        names = await request.app[METRIC_NAMES].current_or_last(request)
        if names is not None:
            toggles = {name: counts for name, counts in toggles.items() if name in names}
        if known_variants is not None:
            toggles = known_variants_only(toggles, known_variants)
    # Every rule is checked here, so a bad report is a 400 even while the store is away.
    report = svc.metrics.check_report(
        body.app_name,
        body.instance_id or "unknown",
        environment,
        start,
        toggles,
        sdk_version=_reported_sdk(request, body.sdk_version),
    )
    dropped = request.app[METRICS].sdk_metrics_dropped
    if report.hour is None:
        dropped.labels("outside_window").inc()
    budget = metrics_row_budget(request, len(toggles) + 1, frontend=frontend)
    try:
        held = request.app[USAGE_BUFFER].hold_report(report, projects, budget.rows)
    except BaseException:
        budget.spent(0)
        raise
    budget.spent(held.made)
    if held.over_budget:
        dropped.labels("row_budget").inc()
    if impact_metrics:
        await record_impact(request, environment, projects, impact_metrics)
