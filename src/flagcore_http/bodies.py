"""Reading request bodies and parameters: JSON only, size-limited, with paths in errors."""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

from aiohttp import web

from flagcore import codec
from flagcore.errors import ErrorDetail, InvalidInput

__all__ = ["MAX_JSON_DEPTH", "int_parameter", "parse_json", "read_body", "read_json"]

_T = TypeVar("_T")


class UnsupportedMediaType(web.HTTPUnsupportedMediaType):
    pass


# How deep a body may nest (an object or array is one level). Real bodies use a handful of
# levels; the bound keeps every later step (walks, orjson's own limit of 255) far from its
# recursion limit, so depth can never become a 500.
MAX_JSON_DEPTH = 64
_INT64 = range(-(2**63), 2**63)
# Longer digit strings cannot be 64-bit integers; int() of them is also what Python bounds.
_INT64_DIGITS = 20
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PATH_KEY_CHARS = 64


class _Refused:
    """What a parse hook returns for a value JSON allows but we refuse: reported with its path."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _parse_int(digits: str) -> int | _Refused:
    if len(digits.lstrip("-")) > _INT64_DIGITS:
        return _Refused("an integer outside -2^63..2^63-1")
    return int(digits)


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number")


def parse_json(raw: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``raw`` as JSON, or `InvalidInput` naming the JSON path of the first problem.

    Stricter than `json.loads`: UTF-8 only, nesting up to ``max_depth``, no ``NaN`` or
    ``Infinity`` (nor numbers that overflow to them), integers within -2^63..2^63-1 (what
    the stores and the SDKs can hold), and no lone surrogates (``"\\ud800"``) in strings or
    keys, which no UTF-8 writer can encode. None of these may reach a store or a response.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            "the body is not UTF-8", [ErrorDetail(f"invalid byte at {exc.start}", "$")]
        ) from None
    try:
        value = json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"the body is not valid JSON: {exc}", [ErrorDetail(str(exc), "$")]
        ) from None
    except RecursionError:  # far deeper than max_depth: refused before any walk
        raise _too_deep("$", max_depth) from None
    _check_json_value(value, max_depth)
    return value


def _too_deep(path: str, max_depth: int) -> InvalidInput:
    return InvalidInput(
        f"the body nests deeper than {max_depth} levels",
        [ErrorDetail(f"nested deeper than {max_depth} levels", path)],
    )


def _refused(path: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{path}: {problem}", [ErrorDetail(problem, path)])


def _key_path(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    shown = key if len(key) <= _PATH_KEY_CHARS else key[:_PATH_KEY_CHARS] + "..."
    return f"{path}[{json.dumps(shown)}]"


def _check_json_value(value: Any, max_depth: int) -> None:
    """Walk without recursion, so the walk itself has no depth to run out of."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth == max_depth:
                raise _too_deep(path, max_depth)
            if isinstance(item, list):
                children = [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item)]
            else:
                children = []
                for key, child in item.items():
                    if _LONE_SURROGATE.search(key):
                        raise _refused(_key_path(path, key), "a key with a lone surrogate")
                    children.append((child, _key_path(path, key), depth + 1))
            stack.extend(reversed(children))  # popped in document order
        elif isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                raise _refused(path, "a string with a lone surrogate (not encodable as UTF-8)")
        elif isinstance(item, _Refused):
            raise _refused(path, item.problem)
        elif isinstance(item, float) and not math.isfinite(item):
            raise _refused(path, "a number too large for a 64-bit float")
        elif isinstance(item, int) and not isinstance(item, bool) and item not in _INT64:
            raise _refused(path, "an integer outside -2^63..2^63-1")


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
