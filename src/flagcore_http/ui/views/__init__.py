"""One module per page (or group of pages) of the admin UI."""

from __future__ import annotations

from aiohttp import web

from flagcore_http.ui.views import (
    actions,
    applications,
    archive,
    context_fields,
    events,
    flag,
    flags,
    playground,
    projects,
    segments,
    sign_in,
    signals,
    strategies,
    tokens,
    users,
)

__all__ = ["ALL_ROUTES"]

# sign_in last: it ends with the catch-all for unknown /ui/ pages.
ALL_ROUTES: tuple[web.RouteTableDef, ...] = (
    flags.routes,
    flag.routes,
    strategies.routes,
    archive.routes,
    segments.routes,
    context_fields.routes,
    projects.routes,
    tokens.routes,
    users.routes,
    events.routes,
    signals.routes,
    actions.routes,
    applications.routes,
    playground.routes,
    sign_in.routes,
)
