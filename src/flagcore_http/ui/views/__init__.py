"""One module per page (or group of pages) of the admin UI."""

from __future__ import annotations

from aiohttp import web

from flagcore_http.ui.views import (
    archive,
    flag,
    flags,
    sign_in,
    strategies,
)

__all__ = ["ALL_ROUTES"]

# sign_in last: it ends with the catch-all for unknown /ui/ pages.
ALL_ROUTES: tuple[web.RouteTableDef, ...] = (
    flags.routes,
    flag.routes,
    strategies.routes,
    archive.routes,
    sign_in.routes,
)
