"""Signing in with an admin token, signing out, and the front page."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import TokenType
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.service import hash_secret
from flagcore_http.auth import MAX_SECRET_LENGTH
from flagcore_http.calls import call
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

__all__ = ["routes"]

routes = web.RouteTableDef()


def safe_next(target: str | None) -> str:
    """Only a path on this site: ``next`` must not send anyone elsewhere after sign-in."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/ui/flags"
    return target


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
    session_cookie(request, signer.new_session(hash_secret(secret)))
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
