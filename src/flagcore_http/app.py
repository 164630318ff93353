"""`create_app`: the aiohttp application over a `flagcore.service.Service`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from flagcore.service import Service
from flagcore_http import openapi
from flagcore_http.auth import SIGNAL_CREDENTIALS, SignalCredentialsCache
from flagcore_http.calls import StoreWorker, store_upkeep
from flagcore_http.client_cache import CacheSizes, ClientCache
from flagcore_http.config import ServerConfig
from flagcore_http.errors import UNMATCHED_PATH, guarded, unmatched_handler
from flagcore_http.keys import CACHE, CONFIG, SERVICE, WORKER
from flagcore_http.routes import (
    actions,
    admin,
    archive,
    client,
    features,
    health,
    projects,
    segments,
    signals,
    tags,
    tokens,
)
from flagcore_http.ui import setup_ui

__all__ = ["create_app"]

ROUTE_TABLES = (
    client.routes,
    features.routes,
    segments.routes,
    projects.routes,
    archive.routes,
    tags.routes,
    tokens.routes,
    signals.routes,
    actions.routes,
    admin.routes,
    health.routes,
)


def create_app(service: Service, config: ServerConfig | None = None) -> web.Application:
    """The whole API over ``service``; the caller owns the service's store and closes it."""
    config = config or ServerConfig()
    app = web.Application(client_max_size=config.max_body_bytes)
    app[SERVICE] = service
    app[CONFIG] = config
    app[CACHE] = ClientCache(CacheSizes(payload_bytes=config.payload_cache_bytes))
    app[SIGNAL_CREDENTIALS] = SignalCredentialsCache()
    app[WORKER] = StoreWorker(limit=config.store_queue_limit)
    for table in ROUTE_TABLES:
        for route in table:
            assert isinstance(route, web.RouteDef), route
            web.RouteDef(route.method, route.path, guarded(route.handler), route.kwargs).register(
                app.router
            )
    app.router.add_get("/docs/openapi.json", guarded(openapi.handler))
    setup_ui(app)  # the admin web UI at / and /ui/ (before the catch-all)
    app.router.add_route("*", UNMATCHED_PATH, unmatched_handler)  # last: tried after all
    app.cleanup_ctx.append(_worker_lifetime)
    app.cleanup_ctx.append(store_upkeep)  # cleaned up first: its last writes need the worker
    return app


async def _worker_lifetime(app: web.Application) -> AsyncIterator[None]:
    yield
    # In-flight store calls finish before the store is closed by the caller.
    app[WORKER].shutdown(wait=True)
