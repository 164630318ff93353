"""``/docs``: the API contract for people, rendered by a vendored Swagger UI (no CDN).

The page and its assets are static files under ``static/docs`` (see its README for the
package and version); the document they render is ``/docs/openapi.json``
(`flagcore_http.openapi`). Nothing here needs a token: the contract is public.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from aiohttp import web

from flagcore_http.contract import documented
from flagcore_http.errors import guarded
from flagcore_http.openapi import DOCUMENT_CACHE

__all__ = ["ASSETS_PREFIX", "PAGE_PATH", "setup_docs_page"]

PAGE_PATH: Final = "/docs"
ASSETS_PREFIX: Final = "/docs/static"
_ASSETS: Final = Path(__file__).parent / "static" / "docs"

# The viewer's script is a file (no inline script); Swagger UI sets style attributes, and
# fetches only the document, from this server.
_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",  # frame-ancestors, for browsers that predate CSP 2
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


@documented({200: {"type": "string"}}, media="text/html", store=False)
async def docs_page(request: web.Request) -> web.Response:
    """The API's documentation page (HTML rendering /docs/openapi.json)."""
    return web.Response(
        body=(_ASSETS / "index.html").read_bytes(),
        content_type="text/html",
        charset="utf-8",
        headers=_HEADERS,
    )


# The files the page may load, by name (nothing else under ``static/docs`` is reachable:
# no directory listing, no path from the request used as a path on disk).
_TYPES: Final = {".js": "text/javascript", ".css": "text/css", ".md": "text/markdown"}
_FILES: Final = frozenset(
    path.name for path in _ASSETS.iterdir() if path.is_file() and path.name != "index.html"
)


@documented({200: {"type": "string"}}, media="*/*", store=False)
async def docs_asset(request: web.Request) -> web.StreamResponse:
    """A file of the documentation page (the vendored viewer, its licence)."""
    name = request.match_info["file"]
    if name not in _FILES:
        raise web.HTTPNotFound()
    content_type = _TYPES.get(Path(name).suffix, "text/plain")
    return web.FileResponse(
        _ASSETS / name,
        headers={
            "Content-Type": f"{content_type}; charset=utf-8",
            "Cache-Control": "public, max-age=3600",
            "X-Content-Type-Options": "nosniff",
        },
    )


def setup_docs_page(app: web.Application) -> None:
    """Serve the page at `PAGE_PATH` and its vendored files under `ASSETS_PREFIX`; errors
    are the API's JSON, as everywhere."""
    app[DOCUMENT_CACHE] = {}
    app.router.add_get(PAGE_PATH, guarded(docs_page))
    app.router.add_get(ASSETS_PREFIX + "/{file}", guarded(docs_asset))
