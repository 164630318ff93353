"""API tokens: list, create (the secret shown once, on the answer to the form), revoke
(by the id the list shows: the page never carries a secret's digest)."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore_http.auth import admin_without_token
from flagcore_http.calls import call
from flagcore_http.errors import status_of
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import (
    field_errors,
    form,
    form_status,
    page,
    redirect,
    render,
    svc,
    viewer,
)

__all__ = ["routes"]

routes = web.RouteTableDef()


async def _page(
    request: web.Request,
    *,
    created: object = None,
    values: dict[str, object] | None = None,
    error: FlagcoreError | None = None,
    refused: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    service = svc(request)
    return render(
        request,
        "tokens.html",
        {
            "tokens": await call(request, service.tokens.list_tokens),
            "projects": await call(request, service.projects.list_projects),
            "environments": await call(request, service.environments.list_environments),
            "created": created,
            "values": values or {"type": "client", "projects": ["*"]},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            "refused": refused.message if refused else None,  # a revocation refused
        },
        status=status,
    )


@routes.get("/ui/tokens")
@page()
async def list_tokens(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post("/ui/tokens")
@page()
async def create_token(request: web.Request) -> web.Response:
    fields = form(request)
    text = {k: fields.get(k, "") for k in ("tokenName", "type", "environment")}
    # Several projects may be chosen (Unleash's create-token form); "*" is all of them.
    # None chosen is refused by the service, never widened to all behind the person's back.
    projects = fields.getall("projects", [])
    values: dict[str, object] = {**text, "projects": projects}
    try:
        if not projects and text["type"] != "admin":
            raise InvalidInput(
                "choose the token's projects (or all projects)",
                [ErrorDetail("choose at least one", "$.projects")],
            )
        created = await call(
            request,
            svc(request).tokens.create_token,
            text["tokenName"],
            text["type"],
            projects=tuple(projects) or ("*",),
            environment=text["environment"] or None,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, status=form_status(error))
    # Shown on this answer only: the server keeps a digest, never the secret.
    return await _page(request, created=created)


@routes.post("/ui/tokens/{token_id}/revoke")
@page()
async def revoke_token(request: web.Request) -> web.Response:
    """Revoke a token; the one this browser signed in with only after a confirmation
    (revoking it ends this session at once). A refusal from the service (the last admin
    token) is shown on the tokens page."""
    token_id = request.match_info["token_id"]
    tokens = {t.id: t for t in await call(request, svc(request).tokens.list_tokens)}
    own = viewer(request).token
    in_use = own is not None and own.id == token_id
    if in_use and token_id in tokens and form(request).get("confirm") != "yes":
        return render(request, "token_revoke.html", {"token": tokens[token_id]})
    if token_id not in tokens:  # the page names tokens by their listed id, nothing else
        return await _page(request, refused=NotFound("there is no such token"), status=404)
    try:
        await call(
            request,
            svc(request).tokens.delete_token,
            token_id,
            actor=viewer(request).actor,
            admin_without_token=admin_without_token(request),
        )
    except FlagcoreError as error:
        return await _page(request, refused=error, status=status_of(error)[0])
    if in_use:
        return redirect("/ui/sign-in")  # this session ended with its token
    name = tokens[token_id].name
    return redirect(with_flash(request, "/ui/tokens", "token-revoked", name))
