"""The SDK API: client features (cached per revision, ETag/304, gzip), register, metrics."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

from aiohttp import web

from flagcore.codec import unstructure_client_features, unstructure_flag
from flagcore.entities import ApiToken, Tag
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.model import ClientFeatures
from flagcore.operators import semver_key
from flagcore_http.bodies import read_json
from flagcore_http.calls import call, service
from flagcore_http.client_cache import RenderedPayload, query_hash
from flagcore_http.keys import CACHE, REVISION, TOKEN, WORKER

__all__ = ["routes"]

routes = web.RouteTableDef()

_SEGMENT_IDS_SINCE = semver_key("4.2.0")
_DEFAULT_ENVIRONMENT = "development"
_INSTANCE_WRITE_INTERVAL_S = 60.0


def _spec_version(request: web.Request) -> int:
    """Format 2 (segment ids + a segments list) for SDKs speaking spec 4.2.0 or later."""
    header = request.headers.get("Unleash-Client-Spec")
    if header is None:
        return 1
    key = semver_key(header.strip())
    assert _SEGMENT_IDS_SINCE is not None
    # An unreadable header gets the format every SDK reads (the list answers 200 or 304 only).
    return 2 if key is not None and key >= _SEGMENT_IDS_SINCE else 1


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


def _scope(request: web.Request) -> tuple[str, tuple[str, ...] | None]:
    """The environment and projects: a client token's scope wins over query parameters."""
    token: ApiToken | None = request.get(TOKEN)
    query = request.query if request.query_string else None
    asked = tuple(query.getall("project", []) + query.getall("project[]", [])) if query else ()
    if token is not None:
        projects: tuple[str, ...] | None = token.projects
        if "*" in token.projects:
            projects = tuple(sorted(set(asked))) or None
        return token.environment or _DEFAULT_ENVIRONMENT, projects
    environment = request.query.get("environment", _DEFAULT_ENVIRONMENT)
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
    """Remember which SDK instances poll (headers are read case-insensitively)."""
    headers = request.headers
    app_name = headers.get("UNLEASH-APPNAME") or headers.get("SERVICE-APPNAME")
    if not app_name:
        return
    instance = headers.get("UNLEASH-INSTANCEID") or headers.get("SERVICE-INSTANCEID") or "unknown"
    cache = request.app[CACHE]
    key = (app_name, instance)
    now = time.monotonic()
    if now - cache.seen_instances.get(key, -1e9) < _INSTANCE_WRITE_INTERVAL_S:
        return
    cache.seen_instances[key] = now
    svc = service(request)
    request.app[WORKER].submit(
        svc.register_client,
        app_name,
        instance,
        environment=environment,
        sdk_version=headers.get("UNLEASH-SDK"),
    )


def _render(
    request: web.Request,
    environment: str,
    projects: tuple[str, ...] | None,
    tags: tuple[Tag, ...],
    name_prefix: str | None,
    version: int,
    revision: int,
) -> RenderedPayload:
    try:
        snapshot = service(request).client_features(
            environment, projects=projects, tags=tags or None, name_prefix=name_prefix
        )
    except NotFound:  # an environment that does not exist has no flags
        snapshot = ClientFeatures()
    payload = unstructure_client_features(snapshot, version=version)
    query: dict[str, Any] = {"environment": environment, "inlineSegmentConstraints": version < 2}
    if projects:
        query["project"] = list(projects)
    if tags:
        query["tag"] = [[tag.type, tag.value] for tag in tags]
    if name_prefix:
        query["namePrefix"] = name_prefix
    digest = query_hash(sorted(query.items()))
    etag = f'"{digest}:{revision}:v{version}"'
    payload["query"] = query
    payload["meta"] = {"revisionId": revision, "etag": etag, "queryHash": digest}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return RenderedPayload(body, etag)


@routes.get("/api/client/features")
async def client_features(request: web.Request) -> web.StreamResponse:
    version = _spec_version(request)
    tags = _tags(request)
    name_prefix = (request.query.get("namePrefix") or None) if request.query_string else None
    environment, projects = _scope(request)
    revision = await _revision(request)
    cache = request.app[CACHE]
    key = (environment, projects, tags, name_prefix, version)
    rendered = cache.payloads.get(key)
    if rendered is None or cache.revision != revision:
        rendered = await call(
            request, _render, request, environment, projects, tags, name_prefix, version, revision
        )
        if cache.revision == revision:
            cache.payloads[key] = rendered
    _note_instance(request, environment)
    if _etag_matches(request.headers.get("If-None-Match"), rendered.etag):
        return web.Response(status=304, headers={"ETag": rendered.etag})
    headers = {"ETag": rendered.etag, "Content-Type": "application/json; charset=utf-8"}
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = "Accept-Encoding"
        return web.Response(body=rendered.gzipped(), headers=headers)
    return web.Response(body=rendered.body, headers=headers)


@routes.get("/api/client/features/{name}")
async def client_feature(request: web.Request) -> web.Response:
    version = _spec_version(request)
    environment, projects = _scope(request)
    name = request.match_info["name"]
    try:
        snapshot = await call(
            request, service(request).client_feature, environment, name, projects=projects
        )
    except NotFound:  # an environment that does not exist has no flags
        snapshot = ClientFeatures()
    if not snapshot.features:
        raise NotFound(f"Could not find feature flag {name}")
    segments = None if version >= 2 else {s.id: s for s in snapshot.segments}
    return web.json_response(unstructure_flag(snapshot.features[0], segments))


def _timestamp(value: Any, path: str) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        # RFC 3339 with nanoseconds, as the Python SDK sends: keep microseconds.
        head, dot, tail = value.partition(".")
        if dot:
            digits = tail.rstrip("Zz")
            zone = tail[len(digits) :]
            return _timestamp(f"{head}.{digits[:6]}{zone}", path)
    raise InvalidInput(f"{path} must be an RFC 3339 time", [ErrorDetail("not a time", path)])


def _required_str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{key} is required", [ErrorDetail(f"{key} is required", f"$.{key}")])
    return value


@routes.post("/api/client/register")
async def register(request: web.Request) -> web.Response:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    strategies = body.get("strategies", [])
    if not isinstance(strategies, list) or not all(isinstance(s, str) for s in strategies):
        raise InvalidInput(
            "strategies must be a list of names", [ErrorDetail("a list of strings", "$.strategies")]
        )
    interval = body.get("interval")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int)):
        raise InvalidInput("interval must be a number", [ErrorDetail("a number", "$.interval")])
    environment, _projects = _scope(request)
    await call(
        request,
        service(request).register_client,
        _required_str(body, "appName"),
        str(body.get("instanceId") or "unknown"),
        environment=environment,
        sdk_version=body.get("sdkVersion") if isinstance(body.get("sdkVersion"), str) else None,
        strategies=strategies,
        started=_timestamp(body.get("started"), "$.started"),
        interval=interval,
    )
    return web.Response(status=202)


@routes.post("/api/client/metrics")
async def metrics(request: web.Request) -> web.Response:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    bucket = body.get("bucket")
    if not isinstance(bucket, dict):
        raise InvalidInput("bucket is required", [ErrorDetail("an object", "$.bucket")])
    toggles = bucket.get("toggles", {})
    if not isinstance(toggles, dict):
        raise InvalidInput(
            "bucket.toggles must be an object", [ErrorDetail("an object", "$.bucket.toggles")]
        )
    start = _timestamp(bucket.get("start"), "$.bucket.start") or dt.datetime.now(dt.UTC)
    environment, _projects = _scope(request)
    await call(
        request,
        service(request).record_metrics,
        _required_str(body, "appName"),
        str(body.get("instanceId") or "unknown"),
        environment,
        start,
        toggles,
    )
    return web.Response(status=202)
