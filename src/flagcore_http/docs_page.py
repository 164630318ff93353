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


def setup_docs_page(app: web.Application) -> None:
    """Serve the page at `PAGE_PATH` and its vendored assets under `ASSETS_PREFIX`."""
    app.router.add_get(PAGE_PATH, guarded(docs_page))
    app.router.add_static(ASSETS_PREFIX, _ASSETS)
