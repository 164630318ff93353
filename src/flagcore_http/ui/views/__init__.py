"""One module per page (or group of pages) of the admin UI."""

from __future__ import annotations

from aiohttp import web

from flagcore_http.ui.views import (
    actions,
    applications,
    archive,
    change_requests,
    context_fields,
    events,
    flag,
    flags,
    my_tokens,
    playground,
    projects,
    provider_sign_in,
    segments,
    service_accounts,
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
    my_tokens.routes,
    service_accounts.routes,
    events.routes,
    signals.routes,
    actions.routes,
    applications.routes,
    playground.routes,
    change_requests.routes,
    provider_sign_in.routes,
    sign_in.routes,
)
