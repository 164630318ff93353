"""`create_app`: the aiohttp application over a `flagcore.service.Service`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from flagcore.service import Service
from flagcore_http import cors, openapi
from flagcore_http.auth import SIGNAL_CREDENTIALS, SignalCredentialsCache, is_frontend_path
from flagcore_http.body_deadline import METHODS_WITH_BODIES, with_body_deadline
from flagcore_http.calls import StoreWorker, store_upkeep
from flagcore_http.change_request_schedules import schedule_runner
from flagcore_http.client_cache import CacheSizes, ClientCache
from flagcore_http.config import ServerConfig
from flagcore_http.connections import hide_server_version
from flagcore_http.context_sampling import CONTEXT_SAMPLER, context_sample_flush, sampler_for

# openapi (issue 18)
from flagcore_http.docs_page import setup_docs_page
from flagcore_http.errors import (
    UNMATCHED_PATH,
    Handler,
    guarded,
    unmatched_handler,
)
from flagcore_http.integration_delivery import DELIVERY, IntegrationSender, integration_delivery
from flagcore_http.keys import CACHE, CONFIG, SERVICE, WORKER
from flagcore_http.metric_names import METRIC_NAMES, MetricNames
from flagcore_http.metrics import (
    METRICS,
    METRICS_PATH,
    ServerMetrics,
    observed,
    prometheus_handler,
)
from flagcore_http.preview_scoring import PREVIEW_SLOT
from flagcore_http.rate_limits import RATE_LIMITS, RateLimits
from flagcore_http.release_progressions import release_plan_runner
from flagcore_http.request_log import REQUEST_LOG, RequestLog
from flagcore_http.route_modules import route_tables
from flagcore_http.routes import client, frontend
from flagcore_http.sign_in_throttle import SIGN_IN_THROTTLE, SignInThrottle
from flagcore_http.stale_announcements import stale_announcements
from flagcore_http.streaming import HUB, StreamingHub, close_streams, hub_lifetime, hub_settings
from flagcore_http.ui import setup_ui
from flagcore_http.usage_buffer import USAGE_BUFFER, UsageBuffer, usage_flush

__all__ = ["create_app"]

# Every module of `flagcore_http.routes` with a `routes` table (`route_modules`), and the
# CORS preflights of the Frontend API and OFREP paths.
ROUTE_TABLES = (*route_tables(), cors.routes)


def create_app(service: Service, config: ServerConfig | None = None) -> web.Application:
    """The whole API over ``service``; the caller owns the service's store and closes it."""
    config = config or ServerConfig()
    hide_server_version()
    # aiohttp would inflate a gzip or deflate body while parsing it, before any handler or
    # token check runs (995 kB inflating to 1 GB cost 0.57 s of CPU, even on a 404): bodies
    # stay as sent, and `body_deadline` refuses any encoding but identity.
    app = web.Application(
        client_max_size=config.max_body_bytes, handler_args={"auto_decompress": False}
    )
    app[SERVICE] = service
    app[CONFIG] = config
    app[CACHE] = ClientCache(CacheSizes(payload_bytes=config.payload_cache_bytes))
    app[SIGNAL_CREDENTIALS] = SignalCredentialsCache()
    app[WORKER] = StoreWorker(limit=config.store_queue_limit)
    app[PREVIEW_SLOT] = asyncio.Semaphore(1)  # previews scored one at a time
    app[frontend.FRONTEND_VIEWS] = frontend.FrontendViews()
    # --- rate limits and the auth-failure tarpit (rate_limits.py) ---
    app[RATE_LIMITS] = RateLimits.from_config(config)
    app[SIGN_IN_THROTTLE] = SignInThrottle.from_config(config)
    app[METRIC_NAMES] = MetricNames()  # metrics reports drop names that are not flags
    # SDK usage, written behind the answers (and held through an outage)
    app[USAGE_BUFFER] = UsageBuffer(
        config.usage_buffer_entries, flush_interval=config.usage_flush_interval
    )
    app[CONTEXT_SAMPLER] = sampler_for(config)  # the preview's traffic sample (issue 30)
    app[REQUEST_LOG] = RequestLog(config.access_log)  # its runner options: the server's
    app[METRICS] = ServerMetrics()  # observe (issue 18 §2): requests counted per route
    requests = app[METRICS].requests
    for table in ROUTE_TABLES:
        for route in table:
            assert isinstance(route, web.RouteDef), route
            handler: Handler = route.handler
            if route.method in METHODS_WITH_BODIES:
                handler = with_body_deadline(handler, config.body_timeout)
            answer = guarded(handler)
            if is_frontend_path(route.path):  # CORS on the paths browsers call, errors too
                answer = cors.with_cors(answer)
            answer = observed(answer, route.path, requests, route.method)  # observe: counted
            # fastpath: repeated SDK polls answered before the full path (counted by it too)
            answer = client.with_fast_path(route, answer, app)
            web.RouteDef(route.method, route.path, answer, route.kwargs).register(app.router)
    # openapi (issue 18): /docs, the contract rendered by a vendored viewer
    setup_docs_page(app)
    app.router.add_get(
        "/docs/openapi.json", observed(guarded(openapi.handler), "/docs/openapi.json", requests)
    )
    # --- observe (issue 18 §2): metrics here unless --metrics-port serves them apart ---
    if config.metrics_port is None:
        scrape = observed(guarded(prometheus_handler), METRICS_PATH, requests)
        app.router.add_get(METRICS_PATH, scrape)
    setup_ui(app)  # the admin web UI at / and /ui/ (before the catch-all)
    app.router.add_route(  # last: tried after all
        "*", UNMATCHED_PATH, observed(unmatched_handler, "/{unmatched_path}", requests)
    )
    app.cleanup_ctx.append(_worker_lifetime)
    app.cleanup_ctx.append(store_upkeep)  # cleaned up first: its last writes need the worker
    app.cleanup_ctx.append(usage_flush)  # ...and held SDK usage written before that
    app.cleanup_ctx.append(context_sample_flush(config.preview_sample_flush_interval))
    app.cleanup_ctx.append(schedule_runner)  # scheduled change requests (issue 30)
    app.cleanup_ctx.append(release_plan_runner)  # release plans' progressions (issue 32)
    app[HUB] = StreamingHub(service, app[WORKER], hub_settings(config))
    app.cleanup_ctx.append(hub_lifetime)
    # integrations out (issue 31): the event log followed, owed deliveries sent
    app[DELIVERY] = IntegrationSender(app)
    app.cleanup_ctx.append(integration_delivery)
    app.cleanup_ctx.append(stale_announcements)  # hourly; stopped before the worker
    app.on_shutdown.append(close_streams)
    # --- observe (issue 18 §2): metrics per app, request ids on every answer ---
    _observe(app)
    return app


def _observe(app: web.Application) -> None:
    """What the metrics read at scrape time, and how long store calls and renders take.
    Requests are counted by the `observed` wrapper of each route; the admin UI's pages
    (registered by `setup_ui`) are not."""
    metrics = app[METRICS]
    metrics.watch(app[SERVICE], app[CACHE], app[HUB], app[WORKER])
    metrics.watch_usage(app[USAGE_BUFFER])
    app[CACHE].render_seconds = metrics.render_seconds.observe
    worker = app[WORKER]
    if isinstance(worker, StoreWorker):
        worker.observer = metrics.observe_store_call


async def _worker_lifetime(app: web.Application) -> AsyncIterator[None]:
    yield
    # In-flight store calls finish before the store is closed by the caller.
    app[WORKER].shutdown(wait=True)
