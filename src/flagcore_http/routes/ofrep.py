"""OFREP, the OpenFeature Remote Evaluation Protocol: any OpenFeature SDK's provider.

``POST /ofrep/v1/evaluate/flags/{key}`` evaluates one flag, ``POST /ofrep/v1/evaluate/flags``
every flag of the token's scope (with an ETag: ``If-None-Match`` → 304; a frontend token
gets only the flags on for its context, as on the Frontend API). Client tokens
(server providers) and frontend tokens (web providers) are accepted, in ``Authorization``
or ``X-API-Key``. ``targetingKey`` is Unleash's ``userId``.

Errors carry OFREP's fields (``key``, ``errorCode``, ``errorDetails``) and ours (``name``,
``message``, ``details``) in one body: an unknown flag is 404 ``FLAG_NOT_FOUND``, a body
that is not JSON 400 ``PARSE_ERROR``, a context of the wrong shape 400 ``INVALID_CONTEXT``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, LimitExceeded, NotFound
from flagcore.service import (
    STANDARD_FIELDS,
    FrontendView,
    bulk_lists_off_flags,
    frontend_context,
)
from flagcore.wire import OfrepErrorAnswer, OfrepEvaluation, OfrepFlags, OfrepParseFailure
from flagcore_http.answering import answered
from flagcore_http.bodies import parse_json, read_up_to, structure_body
from flagcore_http.context_sampling import CONTEXT_SAMPLER
from flagcore_http.contract import documented
from flagcore_http.keys import TOKEN
from flagcore_http.routes.frontend import (
    MAX_CONTEXT_BODY_BYTES,
    answer_with_etag,
    caller_address,
    frontend_scope,
    view_for,
)
from flagcore_http.wire import ContextBody

__all__ = ["ViewFinder", "ofrep_flag", "ofrep_flags", "routes"]

# How a server finds the flags a caller sees: given the request and the context's fields,
# the compiled view of the caller's scope and the context defaults (environment, the
# caller's address). The server's reads its store; `flagcore edge` its upstream's payload.
ViewFinder = Callable[[web.Request, dict[str, Any]], Awaitable[tuple[FrontendView, dict[str, str]]]]

routes = web.RouteTableDef()

_MAX_KEY_SHOWN = 100


class _OfrepFailure(Exception):
    def __init__(self, status: int, code: str, error: FlagcoreError) -> None:
        super().__init__(error.message)
        self.status, self.code, self.error = status, code, error


def _failure_response(failure: _OfrepFailure, key: str | None) -> web.Response:
    error = failure.error
    body = OfrepErrorAnswer.of(
        failure.code,
        "NotFoundError" if failure.status == 404 else "BadDataError",
        error.message,
        tuple(error.details),
        None if key is None else key[:_MAX_KEY_SHOWN],
    )
    return answered(body, status=failure.status)


async def _read_context(request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request's context as (fields, properties); OFREP's PARSE_ERROR for a body that
    is not JSON, INVALID_CONTEXT for one that is not ``{"context": {...}}``."""
    length = request.content_length
    if length is not None and length > MAX_CONTEXT_BODY_BYTES:
        raise LimitExceeded(
            f"a context body has at most {MAX_CONTEXT_BODY_BYTES} bytes",
            "context_bytes",
            MAX_CONTEXT_BODY_BYTES,
        )
    if not request.body_exists:
        return {}, {}
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise web.HTTPUnsupportedMediaType(
            text=f"We accept application/json bodies, not {content_type or 'no content type'}."
        )
    raw = await read_up_to(request.content, MAX_CONTEXT_BODY_BYTES)
    if len(raw) > MAX_CONTEXT_BODY_BYTES:
        raise LimitExceeded(
            f"a context body has at most {MAX_CONTEXT_BODY_BYTES} bytes",
            "context_bytes",
            MAX_CONTEXT_BODY_BYTES,
        )
    if not raw.strip():
        return {}, {}
    try:
        body = parse_json(raw)
    except InvalidInput as error:
        raise _OfrepFailure(400, "PARSE_ERROR", error) from None
    try:
        read = structure_body(body, ContextBody)
    except InvalidInput as error:
        raise _OfrepFailure(400, "INVALID_CONTEXT", error) from None
    return _split_attributes(read.context)


def _invalid(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def _split_attributes(context: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """OpenFeature's flat attributes as Unleash's fields and properties.

    ``targetingKey`` is ``userId`` (an explicit ``userId`` wins); Unleash's standard fields
    keep their names; an explicit ``properties`` object is read as Unleash's; any other
    attribute is a property. Numbers and booleans become their JSON text (Unleash's context
    values are strings, and its number and boolean rules read that text); objects and
    lists cannot be matched by any rule and are refused.
    """
    fields: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    explicit = context.get("properties")
    if explicit is not None and not isinstance(explicit, dict):
        raise _OfrepFailure(
            400,
            "INVALID_CONTEXT",
            _invalid("context.properties must be an object", "$.context.properties"),
        )
    for key, value in context.items():
        if key == "properties" or value is None:
            continue
        if key == "targetingKey":
            if not isinstance(value, str):
                raise _OfrepFailure(
                    400,
                    "INVALID_CONTEXT",
                    _invalid("targetingKey must be a string", "$.context.targetingKey"),
                )
            fields.setdefault("userId", value)
        elif key in STANDARD_FIELDS:
            fields[key] = value
        else:
            properties[key] = _scalar(value, f"$.context.{key[:_MAX_KEY_SHOWN]}")
    if "userId" in context and context["userId"] is not None:
        fields["userId"] = context["userId"]
    for key, value in (explicit or {}).items():
        properties[key] = _scalar(value, f"$.context.properties.{key[:_MAX_KEY_SHOWN]}")
    return fields, properties


def _scalar(value: Any, path: str) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"  # what Unleash's SDKs compare for a boolean
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise _OfrepFailure(400, "INVALID_CONTEXT", _invalid("not a finite number", path))
        return json.dumps(value)  # Unleash's number operators read the text of a number
    if isinstance(value, str):
        return value
    raise _OfrepFailure(
        400,
        "INVALID_CONTEXT",
        _invalid("context attributes must be strings, numbers or booleans", path),
    )


def _context(
    fields: dict[str, Any], properties: dict[str, Any], defaults: dict[str, str]
) -> dict[str, Any]:
    try:
        context = frontend_context(fields, lambda name: f"$.context.{name}", defaults, properties)
    except InvalidInput as error:
        raise _OfrepFailure(400, "INVALID_CONTEXT", error) from None
    return context


async def _server_view(
    request: web.Request, fields: dict[str, Any]
) -> tuple[FrontendView, dict[str, str]]:
    environment, projects = frontend_scope(request, fields.get("environment"))
    defaults = {"environment": environment}
    address = caller_address(request)
    if address:
        defaults["remoteAddress"] = address
    return await view_for(request, environment, projects), defaults


async def _view_and_context(
    request: web.Request, find: ViewFinder
) -> tuple[FrontendView, dict[str, Any]]:
    fields, properties = await _read_context(request)
    view, defaults = await find(request, fields)
    context = _context(fields, properties, defaults)
    sampler = request.app.get(CONTEXT_SAMPLER)  # the server's, for previews (not edge's)
    if sampler is not None:
        sampler.offer(defaults["environment"], context)
    return view, context


@routes.post("/ofrep/v1/evaluate/flags/{key}")
@documented(
    {200: OfrepEvaluation, 400: OfrepErrorAnswer, 404: OfrepErrorAnswer},
    body=ContextBody,
    body_required=False,
)
async def evaluate_flag(request: web.Request) -> web.Response:
    """OFREP: one flag for the context in ``{"context": {...}}``."""
    return await ofrep_flag(request, request.match_info["key"], _server_view)


async def ofrep_flag(request: web.Request, key: str, find: ViewFinder) -> web.Response:
    """OFREP's answer for flag ``key`` in the view ``find`` gives (`ViewFinder`)."""
    try:
        view, context = await _view_and_context(request, find)
        try:
            item = view.ofrep_evaluation(key, context)
        except NotFound as missing:
            raise _OfrepFailure(404, "FLAG_NOT_FOUND", missing) from None
    except _OfrepFailure as failure:
        return _failure_response(failure, key)
    if isinstance(item, OfrepParseFailure):  # a payload that cannot be read as its type
        error = InvalidInput(item.error_details)
        return _failure_response(_OfrepFailure(400, item.error_code, error), key)
    return answered(item)


@routes.post("/ofrep/v1/evaluate/flags")
@documented(
    {200: OfrepFlags, 304: None, 400: OfrepErrorAnswer},
    body=ContextBody,
    body_required=False,
)
async def evaluate_flags(request: web.Request) -> web.Response:
    """OFREP: every flag of the token's scope for the context (ETag, 304); for a frontend
    token only the flags on for it, as on the Frontend API."""
    token: ApiToken | None = request.get(TOKEN)
    off_flags = bulk_lists_off_flags(token.type if token is not None else None)
    return await ofrep_flags(request, _server_view, off_flags=off_flags)


async def ofrep_flags(request: web.Request, find: ViewFinder, *, off_flags: bool) -> web.Response:
    """OFREP's bulk answer over the view ``find`` gives; ``off_flags`` as
    `flagcore.service.bulk_lists_off_flags` says for the caller's token."""
    try:
        view, context = await _view_and_context(request, find)
    except _OfrepFailure as failure:
        return _failure_response(failure, None)
    return answer_with_etag(request, view.ofrep_bulk_body(context, off_flags=off_flags))
