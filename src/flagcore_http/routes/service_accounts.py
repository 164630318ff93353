"""Service accounts, in the shape of Unleash's (enterprise) ``/api/admin/service-account``:
list, create, change, delete, and each account's tokens (list, create with the secret
shown once, delete). A service account cannot sign in; its tokens act with its root role.

Admin only, as the user admin routes are (the roles work moves both into the permission
table). A token of the account itself is refused here like any non-admin.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import Forbidden
from flagcore.permissions import Permission
from flagcore.wire import (
    PersonalTokenAnswer,
    PersonalTokensAnswer,
    ServiceAccountAnswer,
    ServiceAccountsAnswer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.routes.personal_tokens import expiry_of
from flagcore_http.wire import CreatePersonalToken, CreateServiceAccount, UpdateServiceAccount

__all__ = ["routes"]

routes = web.RouteTableDef()

SERVICE_ACCOUNTS = "/api/admin/service-account"
_ID = {"id": shapes.ID}
_TOKEN_ID = {"id": shapes.ID, "tokenId": shapes.ID}


def _admins_only(request: web.Request) -> None:
    """Service accounts need ADMIN (the Admin root role, or a custom root role holding
    it; an admin API token acts as Admin)."""
    if not actor(request).may(Permission.ADMIN):
        raise Forbidden("Managing service accounts needs the Admin root role.")


@routes.get(SERVICE_ACCOUNTS)
@documented({200: ServiceAccountsAnswer}, errors=(403,))
async def list_service_accounts(request: web.Request) -> web.Response:
    _admins_only(request)
    accounts = await call(request, service(request).service_accounts.list_accounts)
    custom = await call(request, service(request).roles.custom_root_roles)
    return answered(ServiceAccountsAnswer.of(accounts, custom))


@routes.post(SERVICE_ACCOUNTS)
@documented({201: ServiceAccountAnswer}, body=CreateServiceAccount, errors=(403, 409))
async def create_service_account(request: web.Request) -> web.Response:
    _admins_only(request)
    body = await read_body(request, CreateServiceAccount)
    account = await call(
        request,
        service(request).service_accounts.create_service_account,
        name=body.name,
        username=body.username,
        root_role=body.root_role,
        actor=actor(request),
    )
    return answered(ServiceAccountAnswer.of(account, []), status=201)


@routes.put(SERVICE_ACCOUNTS + "/{id}")
@documented({200: ServiceAccountAnswer}, body=UpdateServiceAccount, errors=(403, 409), path=_ID)
async def update_service_account(request: web.Request) -> web.Response:
    """A new root role applies to the account's tokens at their next request."""
    _admins_only(request)
    account_id = int_parameter(request, "id")
    body = await read_body(request, UpdateServiceAccount)
    accounts = service(request).service_accounts
    account = await call(
        request,
        accounts.update_service_account,
        account_id,
        name=body.name,
        username=body.username,
        root_role=body.root_role,
        actor=actor(request),
    )
    tokens = await call(request, accounts.tokens_of, account_id)
    return answered(ServiceAccountAnswer.of(account, tokens))


@routes.delete(SERVICE_ACCOUNTS + "/{id}")
@documented({200: None}, path=_ID, errors=(403,))
async def delete_service_account(request: web.Request) -> web.Response:
    """Its tokens are deleted with it, and refused at once on every server."""
    _admins_only(request)
    account_id = int_parameter(request, "id")
    await call(
        request,
        service(request).service_accounts.delete_service_account,
        account_id,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(SERVICE_ACCOUNTS + "/{id}/token")
@documented({200: PersonalTokensAnswer}, path=_ID, errors=(403,))
async def list_service_account_tokens(request: web.Request) -> web.Response:
    _admins_only(request)
    account_id = int_parameter(request, "id")
    tokens = await call(request, service(request).service_accounts.tokens_of, account_id)
    return answered(PersonalTokensAnswer.of(tokens))


@routes.post(SERVICE_ACCOUNTS + "/{id}/token")
@documented({201: PersonalTokenAnswer}, body=CreatePersonalToken, path=_ID, errors=(403, 409))
async def create_service_account_token(request: web.Request) -> web.Response:
    """The answer carries the secret: it is not kept and cannot be shown again."""
    _admins_only(request)
    account_id = int_parameter(request, "id")
    body = await read_body(request, CreatePersonalToken)
    expires_at = expiry_of(body.expires_at)
    created = await call(
        request,
        service(request).service_accounts.create_service_account_token,
        account_id,
        body.description,
        expires_at,
        actor=actor(request),
    )
    return answered(PersonalTokenAnswer.of(created.token, created.secret), status=201)


@routes.delete(SERVICE_ACCOUNTS + "/{id}/token/{tokenId}")
@documented({200: None}, path=_TOKEN_ID, errors=(403,))
async def delete_service_account_token(request: web.Request) -> web.Response:
    _admins_only(request)
    account_id = int_parameter(request, "id")
    token_id = int_parameter(request, "tokenId")
    await call(
        request,
        service(request).service_accounts.delete_service_account_token,
        account_id,
        token_id,
        actor=actor(request),
    )
    return web.Response(status=200)
