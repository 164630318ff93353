"""Reading request bodies and parameters: JSON only, size-limited, with paths in errors."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from aiohttp import web

from flagcore import codec
from flagcore.errors import ErrorDetail, InvalidInput

__all__ = ["int_parameter", "read_body", "read_json"]

_T = TypeVar("_T")


class UnsupportedMediaType(web.HTTPUnsupportedMediaType):
    pass


async def read_json(request: web.Request, *, required: bool = True) -> Any:
    """The JSON body; 415 unless it is JSON, 413 past the size limit, 400 if malformed."""
    if not request.body_exists:
        if required:
            raise InvalidInput("a JSON body is required", [ErrorDetail("missing body", "$")])
        return None
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise web.HTTPUnsupportedMediaType(
            text=f"We accept application/json bodies, not {content_type or 'no content type'}."
        )
    raw = await request.read()  # aiohttp stops at client_max_size with 413
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(
            f"the body is not valid JSON: {exc}", [ErrorDetail(str(exc), "$")]
        ) from None


async def read_body(request: web.Request, cls: type[_T]) -> _T:
    """The JSON body read as ``cls`` (an attrs class the codec knows)."""
    data = await read_json(request)
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object", [ErrorDetail("not an object", "$")])
    return codec.structure(data, cls, "the body")


def int_parameter(request: web.Request, name: str) -> int:
    raw = request.match_info[name]
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(
            f"{name} must be an integer; got {raw!r}",
            [ErrorDetail("must be an integer", f"/params/{name}")],
        ) from None
    if not 0 <= value < 2**63:
        raise InvalidInput(
            f"{name} is out of range", [ErrorDetail("out of range", f"/params/{name}")]
        )
    return value
