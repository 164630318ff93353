"""Signing in with the configured OpenID provider (docs/users-and-roles.md).

``/ui/sign-in/oidc`` sends the browser to the provider with a fresh state, nonce and PKCE
challenge, kept in a signed cookie of their own (SameSite=Lax: it must come back on the
provider's cross-site redirect; only this path sees it; ten minutes). The callback takes
that cookie once, whatever happens: the state must match it, the ID token must carry its
nonce, and only then does the service find or create the person and a new server-side
session start, as a password sign-in's does. Every refusal returns to the sign-in page
with its reason, nothing created.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from flagcore.errors import NotFound, Unauthenticated
from flagcore_http.calls import call
from flagcore_http.openid_provider import (
    CALLBACK_PATH,
    FLOW_SECONDS,
    OPENID_PROVIDER,
    OpenIdProvider,
    PendingSignIn,
    ProviderRefused,
)
from flagcore_http.public_address import cookies_secure, public_origin
from flagcore_http.signed_in import start_session
from flagcore_http.ui.pages import UI_SIGNER, page, render, session_cookie, svc
from flagcore_http.ui.views.sign_in import safe_next

__all__ = ["FLOW_COOKIE", "routes"]

routes = web.RouteTableDef()

FLOW_COOKIE = "flagcore_oidc"
_FLOW_PATH = "/ui/sign-in/oidc"
_MAX_ERROR_SHOWN = 80


def _provider(request: web.Request) -> OpenIdProvider:
    provider = request.app.get(OPENID_PROVIDER)
    if provider is None:
        raise NotFound("Sign-in with a provider is not configured on this server.")
    return provider


def _redirect_uri(request: web.Request, provider: OpenIdProvider) -> str:
    return provider.redirect_uri(public_origin(request))


def _refused(request: web.Request, message: str, next_page: str, status: int) -> web.Response:
    response = render(request, "sign_in.html", {"next": next_page, "error": message}, status=status)
    response.del_cookie(FLOW_COOKIE, path=_FLOW_PATH)
    return response


@routes.get(_FLOW_PATH)
@page(public=True)
async def start_provider_sign_in(request: web.Request) -> web.Response:
    provider = _provider(request)
    target = safe_next(request.query.get("next"))
    try:
        url, pending = await provider.start(_redirect_uri(request, provider), target)
    except ProviderRefused as refused:
        return _refused(request, refused.message, target, status=502)
    response = web.Response(status=303, headers={"Location": url})
    response.set_cookie(
        FLOW_COOKIE,
        request.app[UI_SIGNER].sealed(pending.to_text()),
        max_age=FLOW_SECONDS,
        path=_FLOW_PATH,
        httponly=True,
        samesite="Lax",
        secure=cookies_secure(request),
    )
    return response


@routes.get(CALLBACK_PATH)
@page(public=True)
async def finish_provider_sign_in(request: web.Request) -> web.Response:
    provider = _provider(request)
    sealed = request.app[UI_SIGNER].unsealed(request.cookies.get(FLOW_COOKIE))
    pending = PendingSignIn.from_text(sealed) if sealed is not None else None
    if pending is None:
        message = "This sign-in expired or began in another browser; start it again."
        return _refused(request, message, safe_next(None), status=400)
    target = pending.next
    # As bytes: compare_digest refuses a str that is not ASCII, and the query is anyone's.
    came_back = request.query.get("state", "").encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(came_back, pending.state.encode("ascii")):
        message = "The sign-in came back without the state it left with; start it again."
        return _refused(request, message, target, status=400)
    error = request.query.get("error")
    if error is not None:
        if error == "access_denied":
            message = f"You did not allow the sign-in at {provider.name}."
        else:
            message = f"{provider.name} refused the sign-in ({error[:_MAX_ERROR_SHOWN]})."
        return _refused(request, message, target, status=401)
    code = request.query.get("code", "")
    if not code:
        return _refused(request, "The provider sent no sign-in code.", target, status=400)
    try:
        identity = await provider.finish(code, pending, _redirect_uri(request, provider))
        user = await call(request, svc(request).provider_sign_in.user_for, identity, provider.rules)
        cookie, _started = await start_session(request, user_id=user.id, id_token=identity.id_token)
    except ProviderRefused as refused:
        return _refused(request, refused.message, target, status=401)
    except Unauthenticated as refused:
        return _refused(request, refused.message, target, status=401)
    session_cookie(request, cookie)
    # A page, not a redirect: the session cookie is SameSite=Strict, and a redirect chain
    # that began at the provider (another site) would not carry it to the next page.
    response = render(request, "signing_in.html", {"next": target, "user": user})
    response.del_cookie(FLOW_COOKIE, path=_FLOW_PATH)
    return response
