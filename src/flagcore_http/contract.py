"""What each route accepts and answers, declared on its handler: the API's contract.

A route module declares its contract next to the handler, with `documented`::

    @routes.post("/api/admin/segments")
    @documented({201: SegmentAnswer}, body=SegmentBody, errors=(409,))
    async def create_segment(request: web.Request) -> web.Response: ...

A schema is a class or type the readers or writers know (a model class, a body class of
`flagcore_http.wire`, an answer class of `flagcore.wire`, ``tuple[Variant, ...]``): its
JSON Schema is derived from the same field tables the readers and writers use
(`flagcore.wire.schema`). The few bodies no class reads (what SDKs post, read from rows;
an impact-metrics report; a signal's payload) pass a JSON Schema written next to their
reader; parameters take theirs from `flagcore_http.shapes`.

`flagcore_http.openapi` reads these declarations from the registered handlers (the
wrappers keep the mark, through ``functools.wraps``) and adds the error statuses every
route of a kind can answer: 401/403 where a token is needed, 400/413/415 where a body is
read, 404 where the path names something, 503 where the store is called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

__all__ = ["CONTRACT", "Contract", "Parameter", "contract_of", "documented"]

CONTRACT: Final = "__flagcore_contract__"

_F = TypeVar("_F", bound=Callable[..., Any])


@attrs.frozen
class Parameter:
    """A query parameter or header: its schema, and whether it may be repeated."""

    schema: Any
    description: str = ""
    repeated: bool = False


@attrs.frozen
class Contract:
    """One operation's contract.

    ``responses``: status → the schema of its body (a class/type, a JSON Schema dict, or
    None for no body). ``errors``: error statuses beyond those `flagcore_http.openapi`
    adds for every route of its kind. ``path``: schemas of path parameters that are not
    plain strings. ``media``: the media type of the success bodies. ``links``: operations
    that can follow a success (OpenAPI links, which schemathesis's stateful tests walk),
    each an operationId (``module.handler``: ``segments.get_segment``) → its parameters
    (runtime expressions: ``$response.body#/id``, ``$request.path.project``).
    """

    responses: Mapping[int, Any]
    body: Any = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    query: Mapping[str, Parameter] = attrs.field(factory=dict)
    headers: Mapping[str, Parameter] = attrs.field(factory=dict)
    path: Mapping[str, Any] = attrs.field(factory=dict)
    media: str = "application/json"
    store: bool = True  # calls the store: can answer 503
    links: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)


def documented(
    responses: Mapping[int, Any],
    *,
    body: Any = None,
    body_required: bool = True,
    errors: tuple[int, ...] = (),
    query: Mapping[str, Parameter] | None = None,
    headers: Mapping[str, Parameter] | None = None,
    path: Mapping[str, Any] | None = None,
    media: str = "application/json",
    store: bool = True,
    links: Mapping[str, Mapping[str, str]] | None = None,
) -> Callable[[_F], _F]:
    """Mark a handler with its `Contract` (see the module's docstring)."""
    contract = Contract(
        responses,
        body,
        body_required,
        errors,
        query or {},
        headers or {},
        path or {},
        media,
        store,
        links or {},
    )

    def mark(handler: _F) -> _F:
        setattr(handler, CONTRACT, contract)
        return handler

    return mark


def contract_of(handler: Callable[..., Any]) -> Contract | None:
    """The contract ``handler`` (or the handler it wraps) was declared with, if any."""
    found = getattr(handler, CONTRACT, None)
    return found if isinstance(found, Contract) else None
