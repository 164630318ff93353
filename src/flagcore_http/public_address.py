"""This server's public address, as people's browsers reach it (``FLAGCORE_PUBLIC_URL``).

Links that leave the server (invitations, password resets, the first start's link, the
OpenID callback) are built from it when it is set, never from the request's ``Host``
header, which whoever sends the request chooses: a reset link made from a forged
``Host`` would send a person's secret to someone else's site. Without it, links are built
from the request (safe only where nobody untrusted can reach the server; docs/security.md).
It also tells cookies they travel over HTTPS when a TLS proxy in front of the server
speaks plain HTTP to it.
"""

from __future__ import annotations

from aiohttp import web

from flagcore_http.keys import CONFIG

__all__ = ["cookies_secure", "public_origin"]


def public_origin(request: web.Request) -> str:
    """``https://flags.example.com``: the configured public URL, else the request's own."""
    configured = request.app[CONFIG].public_url
    return configured if configured is not None else str(request.url.origin())


def cookies_secure(request: web.Request) -> bool:
    """Whether cookies get ``Secure``: the request came over HTTPS, or the public URL is
    https (TLS ends at a proxy that speaks HTTP to this server)."""
    configured = request.app[CONFIG].public_url
    return request.secure or (configured is not None and configured.startswith("https://"))
