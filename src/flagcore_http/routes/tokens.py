"""API tokens: the secret is in the create response only; a token is deleted by its id
(as listed) or, as in Unleash, by its secret."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import TokenAnswer, TokensAnswer
from flagcore_http.answering import answered
from flagcore_http.auth import admin_without_token
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import CreateToken

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/api-tokens")
@documented({200: TokensAnswer})
async def list_tokens(request: web.Request) -> web.Response:
    tokens = await call(request, service(request).tokens.list_tokens)
    return answered(TokensAnswer(tuple(map(TokenAnswer.of, tokens))))


@routes.post("/api/admin/api-tokens")
@documented(
    {201: TokenAnswer},
    body=CreateToken,
    errors=(404, 409),
    links={"tokens.delete_token": {"token": "$response.body#/id"}},
)
async def create_token(request: web.Request) -> web.Response:
    body = await read_body(request, CreateToken)
    kind = "client" if body.type in ("client", "backend") else body.type
    projects = body.projects or ((body.project,) if body.project else ("*",))
    environment = body.environment if body.environment not in (None, "*") else None
    created = await call(
        request,
        service(request).tokens.create_token,
        body.token_name,
        kind,
        projects=projects,
        environment=environment,
        actor=actor(request),
    )
    return answered(
        TokenAnswer.of(created.token, created.secret),
        status=201,
        headers={"Location": "api-tokens"},
    )


@routes.delete("/api/admin/api-tokens/{token}")
@documented({200: None}, errors=(409,))
async def delete_token(request: web.Request) -> web.Response:
    """``token``: the id the listing shows, or the secret. The last admin token is kept
    (409) while tokens are checked (not with ``--auth none``)."""
    await call(
        request,
        service(request).tokens.delete_token,
        request.match_info["token"],
        actor=actor(request),
        admin_without_token=admin_without_token(request),
    )
    return web.Response(status=200)
