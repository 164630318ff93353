"""People, in Unleash's admin API shape: ``/api/admin/user-admin`` (users, their passwords
and reset links), ``/api/admin/user`` (who is signed in), ``/auth/simple/login`` and
``/logout``.

Passwords are checked against the policy and hashed on the password pool
(`flagcore_http.signed_in`), never on the store's worker; no answer carries a password or
a hash. A signed-in user needs the Admin root role for the user admin routes (admin API
tokens act as Admin, as before users existed).
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, Forbidden, InvalidInput, Unauthenticated
from flagcore.people import LinkKind, User
from flagcore.permissions import Permission
from flagcore.service import PASSWORD_SIGN_IN_OFF, SIGN_IN_REFUSED, NewUser
from flagcore.wire import ResetPasswordAnswer, UserAnswer, UsersAnswer, token_user
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.auth import from_this_origin
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.keys import CONFIG, TOKEN, USER
from flagcore_http.mail import mail_link
from flagcore_http.rate_limits import tarpit_auth_failure, too_many_requests
from flagcore_http.session_cookie import COOKIE_NAME, set_session_cookie
from flagcore_http.sign_in_throttle import (
    MAX_LOGIN_LENGTH,
    SIGN_IN_THROTTLE,
    too_many_sign_ins,
)
from flagcore_http.signed_in import (
    change_own_password,
    cookie_session,
    hashed_password,
    password_matches,
    set_link,
    start_session,
)
from flagcore_http.wire import CreateUser, IdBody, LoginBody, PasswordBody, UpdateUser

__all__ = ["routes"]

routes = web.RouteTableDef()

USER_ADMIN = "/api/admin/user-admin"
_ID = {"id": shapes.ID}


def _admins_only(request: web.Request) -> None:
    """The user admin routes need ADMIN (the Admin root role, or a custom root role
    holding it; a token acts as Admin)."""
    if not actor(request).may(Permission.ADMIN):
        raise Forbidden("Managing users needs the Admin root role.")


@routes.get(USER_ADMIN)
@documented({200: UsersAnswer})
async def list_users(request: web.Request) -> web.Response:
    _admins_only(request)
    users = await call(request, service(request).users.list_users)
    custom = await call(request, service(request).roles.custom_root_roles)
    return answered(UsersAnswer.of(users, custom))


@routes.post(USER_ADMIN)
@documented({201: UserAnswer}, body=CreateUser, errors=(409,))
async def create_user(request: web.Request) -> web.Response:
    """Without a password the answer's ``inviteLink`` lets the person set one (once)."""
    _admins_only(request)
    body = await read_body(request, CreateUser)
    password = await hashed_password(body.password) if body.password is not None else None
    new = NewUser(body.root_role, body.email, body.username, body.name, password)
    users = service(request).users
    if password is not None:
        created = await call(request, users.create_user, new, actor=actor(request))
        return answered(UserAnswer.of(created), status=201)
    created, link = await call(request, users.invite_user, new, actor=actor(request))
    address = set_link(request, link.token)
    mailed = (
        await mail_link(request, created, address, LinkKind.INVITATION) if body.send_email else None
    )
    sent = None if mailed is None else mailed.sent
    return answered(UserAnswer.of(created, address, sent), status=201)


@routes.get(USER_ADMIN + "/{id}")
@documented({200: UserAnswer}, path=_ID)
async def get_user(request: web.Request) -> web.Response:
    _admins_only(request)
    user = await call(request, service(request).users.get_user, int_parameter(request, "id"))
    return answered(UserAnswer.of(user))


@routes.put(USER_ADMIN + "/{id}")
@documented({200: UserAnswer}, body=UpdateUser, errors=(409,), path=_ID)
async def update_user(request: web.Request) -> web.Response:
    """Disabling a user (``disabled``, flagcore's own) ends their sessions at once."""
    _admins_only(request)
    user_id = int_parameter(request, "id")
    body = await read_body(request, UpdateUser)
    updated = await call(
        request,
        service(request).users.update_user,
        user_id,
        name=body.name,
        email=body.email,
        root_role=body.root_role,
        disabled=body.disabled,
        actor=actor(request),
    )
    return answered(UserAnswer.of(updated))


@routes.delete(USER_ADMIN + "/{id}")
@documented({200: None}, path=_ID)
async def delete_user(request: web.Request) -> web.Response:
    """The user's sessions end at once, on every server."""
    _admins_only(request)
    user_id = int_parameter(request, "id")
    await call(request, service(request).users.delete_user, user_id, actor=actor(request))
    return web.Response(status=200)


@routes.post(USER_ADMIN + "/{id}/change-password")
@documented({200: None}, body=PasswordBody, path=_ID)
async def change_password(request: web.Request) -> web.Response:
    """An admin sets a user's password; the user's sessions end."""
    _admins_only(request)
    user_id = int_parameter(request, "id")
    body = await read_body(request, PasswordBody)
    password = await hashed_password(body.password)
    await call(
        request, service(request).users.set_password, user_id, password, actor=actor(request)
    )
    return web.Response(status=200)


@routes.delete(USER_ADMIN + "/{id}/sessions")
@documented({200: None}, path=_ID)
async def end_user_sessions(request: web.Request) -> web.Response:
    """flagcore's own: an admin ends every session of a user (signed out everywhere)."""
    _admins_only(request)
    user_id = int_parameter(request, "id")
    users = service(request).users
    await call(request, users.get_user, user_id)  # 404 for nobody
    await call(request, service(request).sessions.end_all_of_user, user_id, actor=actor(request))
    return web.Response(status=200)


@routes.post(USER_ADMIN + "/reset-password")
@documented({200: ResetPasswordAnswer}, body=IdBody, errors=(404,))
async def reset_password(request: web.Request) -> web.Response:
    """A single-use link (a day) for the user whose email or username is ``id``, shown to
    the admin who asked, and mailed to the user when a mail server is configured (as
    Unleash does)."""
    _admins_only(request)
    body = await read_body(request, IdBody)
    users = service(request).users
    created = await call(request, users.create_link, body.id, actor=actor(request))
    address = set_link(request, created.token)
    user = await call(request, users.get_user, created.link.user_id)
    mailed = await mail_link(request, user, address, LinkKind.RESET)
    return answered(ResetPasswordAnswer(address, None if mailed is None else mailed.sent))


@routes.get("/api/admin/user")
@documented({200: UserAnswer})
async def signed_in_user(request: web.Request) -> web.Response:
    """The person signed in with this session (an admin token: itself, as Admin)."""
    user: User | None = request.get(USER)
    if user is None:
        token = request.get(TOKEN)
        if token is None:  # --auth none: nobody signed in
            raise Forbidden("Nobody is signed in: authentication is off.")
        return answered(token_user(token.name, token.created_at))
    if user.service_account:  # one of its tokens asks: the account as read just now
        return answered(UserAnswer.of(user))
    fresh = await call(request, service(request).users.get_user, user.id)
    return answered(UserAnswer.of(fresh))


@routes.post("/api/admin/user/change-password")
@documented({200: None}, body=PasswordBody, errors=(401, 429))
async def change_my_password(request: web.Request) -> web.Response:
    """Unleash's ``changeMyPassword``: the old password, and the new one twice. This
    session stays; every other session of the user ends."""
    body = await read_body(request, PasswordBody)
    user: User | None = request.get(USER)
    session = cookie_session(request)
    if user is None or session is None:
        raise InvalidInput(
            "Only a signed-in user changes their own password: an API token has none.",
            [ErrorDetail("not a signed-in user", "$")],
        )
    if body.old_password is None or body.confirm_password != body.password:
        path = "$.oldPassword" if body.old_password is None else "$.confirmPassword"
        problem = "required" if body.old_password is None else "does not match the password"
        raise InvalidInput("The password was not changed.", [ErrorDetail(problem, path)])
    await change_own_password(
        request, actor(request), session.session_id, body.old_password, body.password
    )
    return web.Response(status=200)


@routes.post("/auth/simple/login")
@documented({200: UserAnswer}, body=LoginBody, errors=(401, 403, 429), store=True)
async def login(request: web.Request) -> web.Response:
    """Email or username and password: a new session, in the ``flagcore_session`` cookie."""
    body = await read_body(request, LoginBody)
    if not request.app[CONFIG].password_sign_in:
        raise Forbidden(PASSWORD_SIGN_IN_OFF)
    throttle = request.app[SIGN_IN_THROTTLE]
    wait = throttle.wait(request, body.username)
    if wait:
        return too_many_requests(request, too_many_sign_ins(wait), wait)
    candidate = None
    if len(body.username) <= MAX_LOGIN_LENGTH:
        candidate = await call(request, service(request).sessions.password_candidate, body.username)
    if candidate is None or not await password_matches(candidate, body.password):
        if candidate is None:
            await password_matches(None, body.password)  # the same work either way
        throttle.failed(request, body.username)
        await tarpit_auth_failure(request)  # one counter per address for every way in
        raise Unauthenticated(SIGN_IN_REFUSED, [ErrorDetail("check it", "$.password")])
    cookie, _started = await start_session(request, user_id=candidate.user.id)
    response = answered(UserAnswer.of(candidate.user))
    set_session_cookie(request, response, cookie)
    return response


@routes.post("/logout")
@documented({200: None}, store=True)
async def logout(request: web.Request) -> web.Response:
    """Ends this browser's session on the server (its cookie is refused from now on)."""
    if request.body_exists:
        raise InvalidInput("Signing out takes no body.", [ErrorDetail("no body", "$")])
    if not from_this_origin(request):  # a page of another port or site cannot sign one out
        raise Forbidden("Signing out must come from this site.")
    session = cookie_session(request)
    if session is not None and session.signed_in:
        await call(request, service(request).sessions.end, session.session_id)
    response = web.Response(status=200)
    response.del_cookie(COOKIE_NAME, path="/")
    return response
