"""Signing in with an admin token, signing out, and the front page."""

from __future__ import annotations

import string
import urllib.parse

from aiohttp import web

from flagcore.entities import TokenType
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore_http.auth import MAX_SECRET_LENGTH
from flagcore_http.calls import call
from flagcore_http.rate_limits import tarpit_auth_failure
from flagcore_http.ui.pages import (
    UI_SIGNER,
    field_errors,
    form,
    page,
    redirect,
    render,
    session_cookie,
    svc,
    viewer,
)
from flagcore_http.ui.paths import is_ui_path

__all__ = ["routes"]

routes = web.RouteTableDef()


# The longest ``next`` kept: far more than any page's address with its filters.
MAX_NEXT_LENGTH = 2_048
# What a ``next`` may hold: the printable ASCII of a URL path and query, nothing a browser
# strips or rewrites before resolving it (tab, CR, LF, NUL, space, backslash).
_NEXT_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?%[]")


def safe_next(target: str | None) -> str:
    """Where to go after signing in: ``target`` when it is a strict local path to a UI
    page, else the flags list. Browsers drop tabs and newlines from an address and read a
    backslash as a slash, so a slash, a tab and ``/evil.example`` would leave the site, and
    CR, LF or NUL cannot go in a header at all: only printable URL characters are kept,
    and the path must be one of the UI's."""
    if (
        not target
        or len(target) > MAX_NEXT_LENGTH
        or not set(target) <= _NEXT_CHARACTERS
        or target.startswith("//")
    ):
        return _HOME
    parts = urllib.parse.urlsplit(target)
    if parts.scheme or parts.netloc or not is_ui_path(parts.path):
        return _HOME
    return target


_HOME = "/ui/flags"


@routes.get("/")
@page()
async def front(request: web.Request) -> web.Response:
    return redirect("/ui/flags")


@routes.get("/ui/sign-in")
@page(public=True)
async def sign_in_form(request: web.Request) -> web.Response:
    if viewer(request).auth_off or viewer(request).token is not None:
        return redirect(safe_next(request.query.get("next")))
    return render(request, "sign_in.html", {"next": safe_next(request.query.get("next"))})


@routes.post("/ui/sign-in")
@page(public=True)
async def sign_in(request: web.Request) -> web.Response:
    fields = form(request)
    secret = fields.get("token", "").strip()
    target = safe_next(fields.get("next"))
    try:
        token = None
        if secret and len(secret) <= MAX_SECRET_LENGTH:
            token = await call(request, svc(request).tokens.authenticate, secret)
        if secret and token is None:
            # A guess: the API's tarpit, with the same counter per address, so no way in
            # guesses faster than another (a known token of another kind is no guess).
            await tarpit_auth_failure(request)
        if token is None or token.type is not TokenType.ADMIN:
            problem = "not an admin token this server knows" if secret else "enter a token"
            raise InvalidInput(
                "Sign-in needs an admin API token.", [ErrorDetail(problem, "$.token")]
            )
    except InvalidInput as error:
        return render(
            request,
            "sign_in.html",
            {"next": target, "errors": field_errors(error), "error": error.message},
            status=401,
        )
    signer = request.app[UI_SIGNER]
    session_cookie(request, signer.new_session(token.id))
    return redirect(target)


@routes.post("/ui/sign-out")
@page(public=True)
async def sign_out(request: web.Request) -> web.Response:
    signer = request.app[UI_SIGNER]
    session_cookie(request, signer.new_session())
    return redirect("/ui/sign-in")


@routes.get("/ui/{unknown:.*}")
@page()
async def unknown_page(request: web.Request) -> web.Response:
    """Any other address under /ui/ (registered last among the UI's routes)."""
    raise NotFound("There is no such page.")
