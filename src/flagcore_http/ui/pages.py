"""What every UI page shares: the session, sign-in enforcement, CSRF, forms, rendering.

`page` wraps each UI handler (the API's `errors.guarded` answers JSON; pages answer HTML).
It reads the session cookie, sends visitors who have not signed in to the sign-in page
before reading any form they post, reads a form within the body deadline and a size
bound, refuses any POST without the session's CSRF token, and turns a domain error
nobody handled into an HTML error page with the matching status.
"""

from __future__ import annotations

import functools
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp_jinja2
import attrs
from aiohttp import web
from multidict import MultiDict

from flagcore.entities import ApiToken
from flagcore.errors import (
    ErrorDetail,
    FlagcoreError,
    Forbidden,
    InvalidInput,
)
from flagcore.people import User
from flagcore.permissions import OPERATIONS, Role
from flagcore.principals import Principal
from flagcore.service import Service
from flagcore_http.auth import token_of_id
from flagcore_http.body_deadline import within_body_deadline
from flagcore_http.calls import principal_of
from flagcore_http.closing import closing_when_sent
from flagcore_http.config import AuthMode
from flagcore_http.errors import status_of
from flagcore_http.keys import CONFIG, PRINCIPAL, SERVICE, USER
from flagcore_http.session_cookie import (
    COOKIE_NAME,
    CSRF_FIELD,
    SIGNER,
    Session,
    set_session_cookie,
)
from flagcore_http.signed_in import session_holder

__all__ = [
    "UI_SIGNER",
    "Viewer",
    "field_errors",
    "form",
    "form_status",
    "page",
    "redirect",
    "render",
    "session_cookie",
    "svc",
    "viewer",
]

_log = logging.getLogger("flagcore_http.ui")

UI_SIGNER = SIGNER
_FORM = web.RequestKey("ui_form", MultiDict[str])

# One typed field is at most this long (a payload or a description); the body as a whole is
# bounded by the server's ``max_body_bytes`` for someone signed in…
MAX_FIELD_LENGTH = 100_000
MAX_FIELDS = 2_000
# …and by this for the forms of someone not signed in (sign-in and sign-out): a token is
# at most 1,024 characters and ``next`` at most 2,048, each up to 3 bytes a character
# once %-escaped.
MAX_SIGNED_OUT_FORM_BYTES = 16_384

_SECURITY_HEADERS = {
    # No inline script can run, whatever a user typed: the UI needs no script at all.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",  # frame-ancestors, for browsers that predate CSP 2
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@attrs.frozen
class Viewer:
    """Who is looking at the page, and the CSRF token their forms carry."""

    session: Session
    token: ApiToken | None
    csrf: str
    auth_off: bool
    user: User | None = None
    project_roles: tuple[tuple[str, Role], ...] = ()

    @property
    def signed_in(self) -> bool:
        return self.user is not None or self.token is not None

    @property
    def actor(self) -> Principal:
        """Who acts, as the API resolves them: the service decides what they may do."""
        if self.user is not None:
            return principal_of(self.user, self.project_roles)
        return Principal.admin(
            f"token:{self.token.name}" if self.token is not None else "anonymous"
        )

    def may(
        self, operation: str, *, project: str | None = None, environment: str | None = None
    ) -> bool:
        """Whether the service would let this person do ``operation`` (a service method's
        name): a form they could only be refused at is not drawn (a Viewer sees pages,
        never forms). The service still decides when a form is posted."""
        permission = OPERATIONS[operation]
        return self.actor.may(permission, project=project, environment=environment)


_VIEWER = web.RequestKey("ui_viewer", Viewer)
_NEW_SESSION = web.RequestKey("ui_new_session", Session)


def svc(request: web.Request) -> Service:
    return request.app[SERVICE]


def viewer(request: web.Request) -> Viewer:
    return request[_VIEWER]


def form(request: web.Request) -> MultiDict[str]:
    """The POSTed form (read and bounded by `page`)."""
    return request[_FORM]


def session_cookie(request: web.Request, session: Session) -> None:
    """Make ``session`` the visitor's session when the response goes out."""
    request[_NEW_SESSION] = session


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def page(*, public: bool = False) -> Callable[[Handler], Handler]:
    """Wrap a UI handler; ``public`` pages (sign-in) need no signed-in session."""

    def wrap(handler: Handler) -> Handler:
        async def answer(request: web.Request) -> web.StreamResponse:
            try:
                response = await _handle(request, handler, public)
            except ConnectionResetError:
                raise  # the client hung up mid-form: `within_body_deadline` says so
            except FlagcoreError as error:
                response = _error_page(request, error)
            except web.HTTPException as http_error:
                if http_error.status < 400:
                    raise
                response = _error_page(request, FlagcoreError(http_error.reason), http_error.status)
            except Exception:
                _log.exception("unexpected error on %s %s", request.method, request.path)
                response = _error_page(
                    request, FlagcoreError("Something went wrong on our side."), 500
                )
            if isinstance(response, web.Response):
                # Answered without reading the whole body (not signed in, too large, not
                # a form): close the connection rather than wait for the rest of it.
                response = closing_when_sent(request, response)
            _finish(request, response)
            return response

        @functools.wraps(handler)
        async def ui_handler(request: web.Request) -> web.StreamResponse:
            # The API's body deadline, for every form: a slow body closes the connection.
            return await within_body_deadline(request, answer, request.app[CONFIG].body_timeout)

        return ui_handler

    return wrap


async def _handle(request: web.Request, handler: Handler, public: bool) -> web.StreamResponse:
    signer = request.app[UI_SIGNER]
    auth_off = request.app[CONFIG].auth is AuthMode.NONE
    session = signer.read(request.cookies.get(COOKIE_NAME))
    if session is None:
        session = signer.new_session()
        session_cookie(request, session)
    token = user = None
    roles: tuple[tuple[str, Role], ...] = ()
    if session.signed_in and not auth_off:
        holder = await session_holder(request, session)
        if holder is not None and holder.user is None:
            token = await token_of_id(request, holder.session.token_id)
        user = holder.user if holder is not None else None
        if holder is not None and holder.principal is not None:
            roles = holder.principal.project_roles
        if user is None and token is None:  # ended, or its token revoked: signed out
            session = signer.new_session()
            session_cookie(request, session)
    request[_VIEWER] = Viewer(session, token, signer.csrf_token(session), auth_off, user, roles)
    if user is not None:
        request[USER] = user  # the actor of what this page changes
        request[PRINCIPAL] = request[_VIEWER].actor
    signed_in = auth_off or token is not None or user is not None
    if not public and not signed_in:
        # Decided from the headers: a form from someone not signed in is never read.
        target = request.path_qs if request.method == "GET" else "/"
        return redirect("/ui/sign-in?" + urllib.parse.urlencode({"next": target}))
    if request.method == "POST":
        limit = request.app[CONFIG].max_body_bytes if signed_in else MAX_SIGNED_OUT_FORM_BYTES
        try:
            request[_FORM] = await _read_form(request, limit)
        except _FormTooLarge:
            message = f"A form is at most {limit:,} bytes."
            return _error_page(request, FlagcoreError(message), status=413)
        if not signer.csrf_ok(session, request[_FORM].get(CSRF_FIELD)):
            raise Forbidden(
                "This form has expired or did not come from this site. "
                "Reload the page and try again."
            )
    return await handler(request)


class _FormTooLarge(Exception):
    """The form's body is over its bound (said by its Content-Length, or found reading)."""


async def _read_form(request: web.Request, limit: int) -> MultiDict[str]:
    if request.content_type != "application/x-www-form-urlencoded":
        return MultiDict()  # not one of our forms: it carries no CSRF token either (403)
    raw = await _form_bytes(request, limit)
    try:
        # Strict UTF-8, also in %-escapes: a character that is not is refused, never
        # replaced by U+FFFD behind the person's back.
        posted = urllib.parse.parse_qsl(
            raw.decode("utf-8").rstrip(),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except UnicodeDecodeError:
        raise InvalidInput("The form is not valid UTF-8 form data.") from None
    except ValueError:  # more than MAX_FIELDS
        raise InvalidInput(f"A form has at most {MAX_FIELDS} fields.") from None
    fields: MultiDict[str] = MultiDict()
    for key, value in posted:
        if len(value) > MAX_FIELD_LENGTH:
            raise InvalidInput(
                f"A field is at most {MAX_FIELD_LENGTH} characters.",
                [ErrorDetail(f"at most {MAX_FIELD_LENGTH} characters", f"$.{key[:60]}")],
            )
        fields.add(key, value)
    return fields


async def _form_bytes(request: web.Request, limit: int) -> bytes:
    """The body, refused as soon as it is known to be over ``limit`` bytes: from its
    Content-Length before a byte is read, else while it arrives (chunked)."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise _FormTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _FormTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _finish(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in _SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    session = request.get(_NEW_SESSION)
    if session is not None:
        set_session_cookie(request, response, session)


def redirect(location: str) -> web.Response:
    """303 See Other: after a POST, the browser GETs the result (no resubmission)."""
    return web.Response(status=303, headers={"Location": location})


def render(
    request: web.Request, template: str, context: Mapping[str, Any], *, status: int = 200
) -> web.Response:
    base = {"viewer": request.get(_VIEWER), "request": request}
    return aiohttp_jinja2.render_template(template, request, {**base, **context}, status=status)


def form_status(error: FlagcoreError | None) -> int:
    """A form shown again: 200, 400 for what was typed, 403 when the person may not."""
    if error is None:
        return 200
    return 403 if isinstance(error, Forbidden) else 400


def field_errors(error: FlagcoreError) -> dict[str, list[str]]:
    """The error's details keyed by form field: ``$.constraints[0].values[1]`` becomes
    ``constraints-0-values-1``; templates show a field's messages and its children's."""
    keyed: dict[str, list[str]] = {}
    for detail in error.details:
        if detail.path:
            keyed.setdefault(path_key(detail.path), []).append(detail.message)
    return keyed


def path_key(path: str) -> str:
    key = path.removeprefix("$").replace("[", ".").replace("]", "")
    return "-".join(part for part in key.split(".") if part)


def _error_page(
    request: web.Request, error: FlagcoreError, status: int | None = None
) -> web.Response:
    if status is None:
        status, _name = status_of(error)
    return render(
        request,
        "error.html",
        {"message": error.message, "details": error.details, "status": status},
        status=status,
    )
