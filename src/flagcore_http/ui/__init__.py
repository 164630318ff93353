"""The admin web UI: server-rendered pages at ``/`` and ``/ui/...`` over the same `Service`.

Pages are Jinja2 templates (autoescaping on) rendered by aiohttp-jinja2, plain HTML forms
(no script), one stylesheet. See ``docs/ui.md``.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web

from flagcore_http.keys import CONFIG
from flagcore_http.openid_provider import OPENID_PROVIDER, OpenIdProvider
from flagcore_http.session_cookie import SessionSigner
from flagcore_http.ui import filters, flash, forms
from flagcore_http.ui.pages import UI_SIGNER
from flagcore_http.ui.paths import FAVICON_PATH
from flagcore_http.ui.views import ALL_ROUTES

__all__ = ["setup_ui"]

_HERE = Path(__file__).resolve().parent


def setup_ui(app: web.Application) -> None:
    """Add the UI's routes, templates and stylesheet to ``app`` (its config is set)."""
    config = app[CONFIG]
    # Without a configured secret, one per process: sessions end when the server restarts.
    secret = config.ui_secret or secrets.token_hex(32)
    app[UI_SIGNER] = SessionSigner(secret, config.ui_session_seconds)
    if config.oidc_issuer:
        app[OPENID_PROVIDER] = OpenIdProvider(config)
        app.on_cleanup.append(_close_provider)
    environment = aiohttp_jinja2.setup(
        app,
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(filters.FILTERS)
    provider = app.get(OPENID_PROVIDER)
    environment.globals["provider_name"] = provider.name if provider is not None else None
    environment.globals["password_sign_in"] = config.password_sign_in
    environment.globals["csrf"] = filters.csrf_field
    environment.globals["flash_message"] = flash.flash_message
    # The empty rows the row editors draw, the same ones forms.py reads as untouched.
    environment.globals["blank_constraint"] = forms.BLANK_CONSTRAINT
    environment.globals["blank_variant"] = forms.BLANK_VARIANT
    for table in ALL_ROUTES:
        app.router.add_routes(table)
    app.router.add_static("/ui/static", _HERE / "static")
    app.router.add_get(FAVICON_PATH, _favicon)


async def _favicon(request: web.Request) -> web.FileResponse:
    """The site's icon: public, like the stylesheet, and cached for a day."""
    return web.FileResponse(
        _HERE / "static" / "favicon.ico",
        headers={
            "Content-Type": "image/vnd.microsoft.icon",
            "Cache-Control": "public, max-age=86400",
            "X-Content-Type-Options": "nosniff",
        },
    )


async def _close_provider(app: web.Application) -> None:
    await app[OPENID_PROVIDER].close()
