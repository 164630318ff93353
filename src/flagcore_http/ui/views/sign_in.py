"""Signing in with a password or an admin token, setting a password through a link,
signing out (here or everywhere), and the front page.

Every sign-in starts a new server-side session (a new id: one planted before is worth
nothing); signing out deletes it, so the old cookie is refused from then on, on every
server over the same database. A session started at an OpenID provider whose discovery
document names an ``end_session_endpoint`` signs out there too (RP-initiated logout): a
page sends the browser on to the provider, which sends it back to the sign-in page (a
page, not a redirect: the UI's ``form-action 'self'`` would stop a form's redirect to
another site).
"""

from __future__ import annotations

import math
import string
import urllib.parse

from aiohttp import web

from flagcore.entities import TokenType
from flagcore.errors import ErrorDetail, InvalidInput, NotFound, Unauthenticated
from flagcore.people import UserSession
from flagcore.service import PASSWORD_SIGN_IN_OFF, SIGN_IN_REFUSED
from flagcore_http.auth import MAX_SECRET_LENGTH
from flagcore_http.calls import call
from flagcore_http.keys import CONFIG
from flagcore_http.openid_provider import OPENID_PROVIDER
from flagcore_http.public_address import public_origin
from flagcore_http.rate_limits import tarpit_auth_failure
from flagcore_http.sign_in_throttle import (
    MAX_LOGIN_LENGTH,
    SIGN_IN_THROTTLE,
    too_many_sign_ins,
)
from flagcore_http.signed_in import hashed_password, password_matches, start_session
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
    if viewer(request).auth_off or viewer(request).signed_in:
        return redirect(safe_next(request.query.get("next")))
    return render(request, "sign_in.html", {"next": safe_next(request.query.get("next"))})


@routes.post("/ui/sign-in")
@page(public=True)
async def sign_in(request: web.Request) -> web.Response:
    fields = form(request)
    # A pasted token may bring ASCII spaces or a line end; a Unicode space (which
    # `str.strip()` would also take away) stays, as the API's header check keeps it.
    secret = fields.get("token", "").strip(" \t\r\n")
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
    cookie, _started = await start_session(request, token_id=token.id)
    session_cookie(request, cookie)
    return redirect(target)


@routes.post("/ui/sign-in/password")
@page(public=True)
async def sign_in_with_password(request: web.Request) -> web.Response:
    fields = form(request)
    login, password = fields.get("username", ""), fields.get("password", "")
    target = safe_next(fields.get("next"))
    if not request.app[CONFIG].password_sign_in:
        context = {"next": target, "error": PASSWORD_SIGN_IN_OFF}
        return render(request, "sign_in.html", context, status=403)
    throttle = request.app[SIGN_IN_THROTTLE]
    wait = throttle.wait(request, login)
    if wait:
        response = render(
            request,
            "sign_in.html",
            {"next": target, "username": login, "error": too_many_sign_ins(wait)},
            status=429,
        )
        response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return response
    candidate = None
    if login and len(login) <= MAX_LOGIN_LENGTH:
        candidate = await call(request, svc(request).sessions.password_candidate, login)
    if not await password_matches(candidate, password) or candidate is None:
        throttle.failed(request, login)
        await tarpit_auth_failure(request)  # one counter per address for every way in
        error = InvalidInput(SIGN_IN_REFUSED, [ErrorDetail("check it", "$.password")])
        return render(
            request,
            "sign_in.html",
            {
                "next": target,
                "username": login,
                "errors": field_errors(error),
                "error": error.message,
            },
            status=401,
        )
    try:
        cookie, _started = await start_session(request, user_id=candidate.user.id)
    except Unauthenticated as refused:  # disabled or deleted meanwhile
        return render(
            request, "sign_in.html", {"next": target, "error": refused.message}, status=401
        )
    session_cookie(request, cookie)
    return redirect(target)


@routes.get("/ui/set-password")
@page(public=True)
async def set_password_form(request: web.Request) -> web.Response:
    token = request.query.get("token", "")
    user = await call(request, svc(request).users.link_user, token)
    return render(request, "set_password.html", {"user": user, "token": token})


@routes.post("/ui/set-password")
@page(public=True)
async def set_password(request: web.Request) -> web.Response:
    fields = form(request)
    token = fields.get("token", "")
    user = await call(request, svc(request).users.link_user, token)
    try:
        password = await hashed_password(fields.get("password", ""))
    except InvalidInput as error:
        context = {
            "user": user,
            "token": token,
            "errors": field_errors(error),
            "error": error.message,
        }
        return render(request, "set_password.html", context, status=400)
    user = await call(request, svc(request).users.use_link, token, password)
    cookie, _started = await start_session(request, user_id=user.id)
    session_cookie(request, cookie)
    return redirect(_HOME)


async def _signed_out(request: web.Request, ended: UserSession | None) -> web.Response:
    """The sign-in page, or first the provider's sign-out when this session began there."""
    session_cookie(request, request.app[UI_SIGNER].new_session())
    provider = request.app.get(OPENID_PROVIDER)
    if ended is not None and ended.id_token is not None and provider is not None:
        after = provider.after_logout_uri(public_origin(request))
        url = await provider.logout_url(ended.id_token, after)
        if url is not None:
            context = {"viewer": None, "provider": provider.name, "url": url}
            return render(request, "signed_out.html", context)
    return redirect("/ui/sign-in")


@routes.post("/ui/sign-out")
@page(public=True)
async def sign_out(request: web.Request) -> web.Response:
    """Ends the session on the server: the old cookie no longer signs anyone in."""
    session = viewer(request).session
    ended = None
    if session.signed_in:
        ended = await call(request, svc(request).sessions.end, session.session_id)
    return await _signed_out(request, ended)


@routes.post("/ui/sign-out-everywhere")
@page()
async def sign_out_everywhere(request: web.Request) -> web.Response:
    """Ends every session of the signed-in user, in every browser, on every server."""
    user = viewer(request).user
    session = viewer(request).session
    ended = None
    if session.signed_in:
        ended = await call(request, svc(request).sessions.end, session.session_id)
    if user is not None:
        await call(
            request, svc(request).sessions.end_all_of_user, user.id, actor=viewer(request).actor
        )
    return await _signed_out(request, ended)


@routes.get("/ui/{unknown:.*}")
@page()
async def unknown_page(request: web.Request) -> web.Response:
    """Any other address under /ui/ (registered last among the UI's routes)."""
    raise NotFound("There is no such page.")
