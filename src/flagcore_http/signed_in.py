"""Who a browser's session cookie belongs to, and the slow password work off the loop.

The cookie (`flagcore_http.session_cookie`) names a server-side session; every request
asks the store whether it still lives (`Service.sessions.holder`), so a session ended on
another server is refused here at the next request. Password hashes are made and checked
on a small pool of their own: never on the event loop, never on the store's worker (whose
queue SDK polls share), and at most two at a time (Argon2id takes 64 MiB each).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aiohttp import web

from flagcore.errors import ErrorDetail, InvalidInput, RateLimited, ServiceUnavailable
from flagcore.passwords import MAX_PASSWORD_LENGTH, NewPassword, dummy_verify, verify
from flagcore.principals import Principal
from flagcore.service import PasswordCandidate, SessionHolder, StartedSession
from flagcore_http.calls import call
from flagcore_http.keys import CONFIG, SERVICE
from flagcore_http.public_address import public_origin
from flagcore_http.rate_limits import tarpit_auth_failure
from flagcore_http.session_cookie import COOKIE_NAME, SIGNER, Session
from flagcore_http.sign_in_throttle import SIGN_IN_THROTTLE, OwnPassword, too_many_sign_ins

__all__ = [
    "change_own_password",
    "cookie_session",
    "hashed_password",
    "password_matches",
    "session_holder",
    "set_link",
    "start_session",
]

_T = TypeVar("_T")

_PASSWORD_WORK = ThreadPoolExecutor(max_workers=2, thread_name_prefix="flagcore-passwords")
MAX_WAITING_PASSWORD_WORK = 64
"""Password checks and hashes queued at most (two run, the rest wait); past it a sign-in
is 503 with Retry-After: a flood from many addresses cannot queue work without bound."""
_waiting = 0


async def _on_password_pool(fn: Callable[..., _T], *args: Any) -> _T:
    global _waiting
    if _waiting >= MAX_WAITING_PASSWORD_WORK:
        raise ServiceUnavailable("Too many sign-ins at once; try again shortly.", 1.0)
    _waiting += 1
    try:
        return await asyncio.get_running_loop().run_in_executor(_PASSWORD_WORK, fn, *args)
    finally:
        _waiting -= 1


def cookie_session(request: web.Request) -> Session | None:
    """The session the request's cookie carries (signed, unexpired), or None."""
    signer = request.app.get(SIGNER)
    if signer is None:
        return None
    return signer.read(request.cookies.get(COOKIE_NAME))


async def session_holder(request: web.Request, session: Session | None) -> SessionHolder | None:
    """Who the signed-in ``session`` belongs to, if the store still has it live."""
    if session is None or not session.signed_in:
        return None
    return await call(request, request.app[SERVICE].sessions.holder, session.session_id)


async def start_session(
    request: web.Request,
    *,
    user_id: int | None = None,
    token_id: str | None = None,
    id_token: str | None = None,
) -> tuple[Session, StartedSession]:
    """A new server-side session (a new id at every sign-in) and the cookie naming it
    (``id_token``: the provider's, for a sign-in there)."""
    signer = request.app[SIGNER]
    lifetime = dt.timedelta(seconds=request.app[CONFIG].ui_session_seconds)
    started = await call(
        request,
        request.app[SERVICE].sessions.start,
        user_id=user_id,
        token_id=token_id,
        lifetime=lifetime,
        id_token=id_token,
    )
    return signer.new_session(started.secret), started


async def hashed_password(password: str, path: str = "$.password") -> NewPassword:
    """``password`` checked against the policy and hashed, on the password pool."""
    return await _on_password_pool(NewPassword.of, password, path)


async def password_matches(candidate: PasswordCandidate | None, password: str) -> bool:
    """Whether ``password`` is the candidate's (with nobody named, the same work is done).

    One longer than the policy allows matches no password set through flagcore: it is
    refused without hashing, so a megabyte "password" costs nothing."""
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    if candidate is None:
        await _on_password_pool(dummy_verify, password)
        return False
    return await _on_password_pool(verify, candidate.password_hash, password)


def set_link(request: web.Request, token: str) -> str:
    """The address where a link's holder sets their password, on this server (its public
    URL when configured, never the request's ``Host`` then)."""
    return f"{public_origin(request)}/ui/set-password?token={token}"


async def change_own_password(
    request: web.Request,
    who: Principal,
    session_id: str,
    old_password: str,
    password: str,
) -> None:
    """A signed-in person sets a new password, giving their current one: wrong current
    passwords are counted as failed sign-ins are (under a key no sign-in can name), the
    new one is checked and hashed on the password pool, and every other session of theirs
    ends (this one, ``session_id``, stays). `RateLimited` past the count, `InvalidInput`
    at ``$.oldPassword`` or ``$.password``."""
    assert who.user_id is not None, "a person, not a token"
    throttle = request.app[SIGN_IN_THROTTLE]
    login = OwnPassword(who.user_id)
    wait = throttle.wait(request, login)
    if wait:
        raise RateLimited(too_many_sign_ins(wait), wait)
    service = request.app[SERVICE]
    candidate = await call(request, service.sessions.own_password, who.user_id)
    if not await password_matches(candidate, old_password):
        throttle.failed(request, login)
        await tarpit_auth_failure(request)  # one counter per address for every way in
        raise InvalidInput(
            "The old password is not right.", [ErrorDetail("not right", "$.oldPassword")]
        )
    hashed = await hashed_password(password)
    await call(
        request,
        service.users.set_password,
        who.user_id,
        hashed,
        actor=who,
        keep_session=session_id,
    )
