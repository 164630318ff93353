"""A signed-in user's own personal access tokens, in Unleash's shape
(``/api/admin/user/tokens``): list, create (the secret is in that answer only), delete.

Only the person's own tokens are reached: the owner is who the request acts as (a
session, or one of their tokens), never a path parameter. An admin API token is nobody:
it has no personal tokens (403, as Unleash answers).
"""

from __future__ import annotations

import datetime as dt

from aiohttp import web

from flagcore.errors import ErrorDetail, Forbidden, InvalidInput
from flagcore.people import User
from flagcore.wire import PersonalTokenAnswer, PersonalTokensAnswer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.keys import USER
from flagcore_http.wire import CreatePersonalToken

__all__ = ["expiry_of", "routes"]

routes = web.RouteTableDef()

MY_TOKENS = "/api/admin/user/tokens"


def _owner(request: web.Request) -> User:
    user: User | None = request.get(USER)
    if user is None:
        raise Forbidden("Personal access tokens belong to a signed-in user, not to an API token.")
    if user.service_account:
        raise Forbidden("A service account's tokens are managed by an admin, not by its tokens.")
    return user


def expiry_of(text: str, path: str = "$.expiresAt") -> dt.datetime:
    """An RFC 3339 date-time with its offset (``2027-01-31T00:00:00Z``); anything else,
    a date without a time or a time without an offset, is refused rather than guessed."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        value = None
    if value is None or value.tzinfo is None or "T" not in text.upper():
        raise InvalidInput(
            f"{path.removeprefix('$.')} must be a date-time with its UTC offset; got {text[:40]!r}",
            [ErrorDetail("a date-time such as 2027-01-31T00:00:00Z", path)],
        )
    return value.astimezone(dt.UTC)


@routes.get(MY_TOKENS)
@documented({200: PersonalTokensAnswer}, errors=(403,))
async def list_my_tokens(request: web.Request) -> web.Response:
    owner = _owner(request)
    tokens = await call(request, service(request).personal_tokens.list_of, owner.id)
    return answered(PersonalTokensAnswer.of(tokens))


@routes.post(MY_TOKENS)
@documented({201: PersonalTokenAnswer}, body=CreatePersonalToken, errors=(403, 409))
async def create_my_token(request: web.Request) -> web.Response:
    """The answer carries the secret: it is not kept and cannot be shown again."""
    owner = _owner(request)
    body = await read_body(request, CreatePersonalToken)
    expires_at = expiry_of(body.expires_at)
    created = await call(
        request,
        service(request).personal_tokens.create_personal_token,
        owner.id,
        body.description,
        expires_at,
        actor=actor(request),
    )
    return answered(PersonalTokenAnswer.of(created.token, created.secret), status=201)


@routes.delete(MY_TOKENS + "/{id}")
@documented({200: None}, path={"id": shapes.ID}, errors=(403,))
async def delete_my_token(request: web.Request) -> web.Response:
    """Another user's token is 404, as an unknown one is."""
    owner = _owner(request)
    token_id = int_parameter(request, "id")
    await call(
        request,
        service(request).personal_tokens.delete_personal_token,
        owner.id,
        token_id,
        actor=actor(request),
    )
    return web.Response(status=200)
