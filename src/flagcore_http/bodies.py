"""Reading request bodies and parameters: JSON only, size-limited, with paths in errors.

Every body the server reads goes through `parse_json`, which accepts JSON as RFC 8259
defines it and no more, within bounds every later step (the store, orjson, the JSON
writers, every SDK) can hold:

- UTF-8 only; nesting at most `MAX_DEPTH` arrays/objects deep;
- no lone surrogates (``"\\ud800"``): they cannot be written as UTF-8;
- numbers finite (``NaN``, ``Infinity`` and ``1e400`` are refused), integers within a
  signed 64-bit integer, floats within a double;
- no key twice in one object (parsers disagree on which one wins: a body whose meaning
  depends on the reader is refused);

so what gets in can always be stored and written out again. A problem is a 400 whose
detail names the JSON path (``$.payload.a[3]``).

Most bodies break none of these rules. orjson refuses NaN, Infinity, overflowing numbers
and lone surrogates itself; two other rules leave a mark in the raw text that C-speed
scans find (`_fine_for_orjson`: a run of 19 digits, brackets nested too deep), and a key
twice shows as fewer colons in orjson's writing of its value than in the text
(`_no_key_twice`). A body without a mark is parsed by ``orjson.loads`` alone (a 330 kB
metrics report: about 2.9 ms, the key check 0.7 of it, against 5 for ``json.loads`` with
the old scans). A body orjson refuses, or with a mark real or not
(``"1234567890123456789"`` inside a string), takes the strict walk, which decides and
names the path; so the answers are the same either way.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, TypeVar

import aiohttp
import attrs
import orjson
from aiohttp import web

from flagcore import wire
from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded
from flagcore.wire import INT64_MAX, INT64_MIN
from flagcore_http import wire as http_wire

__all__ = [
    "MAX_DEPTH",
    "as_keywords",
    "int_parameter",
    "parse_json",
    "query_int",
    "read_body",
    "read_json",
    "read_up_to",
    "structure_body",
]

_T = TypeVar("_T")

# Unleash's deepest body (a strategy's variants' overrides) is 5 levels; signal payloads
# are free-form, and 64 levels leave room for any real webhook while staying far below
# Python's recursion limit and orjson's (255).
MAX_DEPTH: Final = 64


class _Refused:
    """A token JSON's parser read that cannot be kept; reported with its path (and, for
    an object with a key twice, that key's path)."""

    __slots__ = ("key", "why")

    def __init__(self, why: str, key: str | None = None) -> None:
        self.why = why
        self.key = key


_OUTSIDE_INT64 = "an integer outside -2^63 to 2^63-1"


def _parse_constant(text: str) -> _Refused:
    return _Refused(f"{text} (not a JSON number)")


def _parse_long_int(text: str) -> int | _Refused:
    # Only used to find where an integer too long for int() is: over 20 characters no
    # integer fits in 64 bits.
    return _Refused(_OUTSIDE_INT64) if len(text) > 20 else int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    """An object, unless a key comes twice: JSON parsers disagree on which one wins
    (``"type":"client","type":"admin"``), so no reading of such a body is safe."""
    made = dict(pairs)
    if len(made) == len(pairs):
        return made
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            return _Refused(f"the key {json.dumps(key)[:80]} twice", key)
        seen.add(key)
    raise AssertionError("a shorter dict has a key twice")  # pragma: no cover


# Integers and floats are built by the parser's C code (a Python hook per number would
# cost 20x on a body of numbers); their range is checked in the walk afterwards.
_DECODER = json.JSONDecoder(parse_constant=_parse_constant, object_pairs_hook=_object)
_LONG_INT_DECODER = json.JSONDecoder(
    parse_constant=_parse_constant, parse_int=_parse_long_int, object_pairs_hook=_object
)


def parse_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH, what: str = "the body") -> Any:
    """``raw`` as a JSON value, or `InvalidInput` (a 400) naming the path of the problem.

    The one JSON parser for request bodies: call it with the bytes as received.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise _invalid(f"{what} is not UTF-8: {exc.reason} at byte {exc.start}", "$") from None
    encoded = _utf8(raw, text)
    if _fine_for_orjson(encoded, max_depth):
        try:
            value = orjson.loads(encoded)
        except orjson.JSONDecodeError:
            pass  # not valid JSON, or a rule orjson keeps too: the strict path says which
        else:
            if _no_key_twice(encoded, value):
                return value
    try:
        value = _decode(_DECODER, text, max_depth, what)
    except ValueError:
        # An integer of more than 4,300 digits, which int() refuses: find where it is.
        value = _decode(_LONG_INT_DECODER, text, max_depth, what)
    _check_value(value, max_depth, what)
    return value


# The mark of an integer of 19 or more digits (2^63 has 19): a run of "0"s once every
# digit is made "0"; and the brackets alone, for the nesting depth.
_MARKED = bytes.maketrans(b"123456789", b"000000000")
_BRACKETS_DELETED = bytes(c for c in range(256) if c not in b"[]{}")


def _fine_for_orjson(encoded: bytes, max_depth: int) -> bool:
    """True when orjson's value of the UTF-8 ``encoded`` needs no walk: orjson itself
    refuses NaN, Infinity, numbers that overflow to infinity and lone surrogates, so what
    is left to look for is an integer of 19 or more digits (orjson keeps those up to 2^64
    and makes larger ones floats; our limit is 64-bit signed) and nesting past
    ``max_depth``. Bytes scans only, in C: for a 330 kB metrics report, orjson and these
    scans cost about 2 ms where ``json.loads`` and the scans it needed cost 5."""
    if b"0" * 19 in encoded.translate(_MARKED):
        return False
    return _nested_at_most(encoded, max_depth)


_ESCAPED_COLONS = (b"\\u003a", b"\\u003A")


def _no_key_twice(encoded: bytes, value: Any) -> bool:
    """True when no object of ``encoded`` has a key twice (orjson keeps the last one
    silently). Each key has its colon; orjson's own writing of ``value`` has the colons
    of the keys it kept and of the strings, so fewer colons there than in the text
    (counting ``\\u003a`` as the colon it may be) means a key was dropped. In C: for a
    330 kB metrics report, a fraction of a millisecond. False may be needless (an escaped
    backslash before ``u003a``): the strict walk then decides."""
    colons = encoded.count(b":")
    if not colons:
        return True
    if b"\\u003" in encoded:
        colons += sum(encoded.count(escaped) for escaped in _ESCAPED_COLONS)
    return orjson.dumps(value).count(b":") == colons


def _nested_at_most(encoded: bytes, max_depth: int) -> bool:
    """True when the brackets of ``encoded`` close within ``max_depth`` levels (False may
    be needless: brackets inside strings count too; the walk then decides)."""
    brackets = encoded.translate(None, _BRACKETS_DELETED)
    # Each pass removes the innermost pairs: ``max_depth`` passes empty any well-formed
    # text nested at most that deep (brackets inside strings may leave some: the walk).
    for _ in range(max_depth):
        if not brackets:
            return True
        shorter = brackets.replace(b"{}", b"").replace(b"[]", b"")
        if len(shorter) == len(brackets):
            return False
        brackets = shorter
    return not brackets


def _utf8(raw: bytes | str, text: str) -> bytes:
    if isinstance(raw, bytes):
        return raw
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a str argument: the walk names it
        return b"\\ud800"


def _decode(decoder: json.JSONDecoder, text: str, max_depth: int, what: str) -> Any:
    try:
        return decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise _invalid(f"{what} is not valid JSON: {exc}", "$") from None
    except RecursionError:
        # The parser recurses once per level: far past MAX_DEPTH it stops here, cleanly.
        raise _too_deep(what, "$", max_depth) from None


def _check_value(root: Any, max_depth: int, what: str) -> None:
    """Walk the parsed value once, without recursion: depth, then every key and scalar.

    Plain values (ASCII strings, 64-bit integers, finite floats) cost one type test;
    only containers are put on the stack, with their path kept as linked pairs.
    """
    stack: list[tuple[Any, int, Any]] = [(root, 0, None)]
    kind = type(root)
    if kind is not dict and kind is not list:
        _check_scalar(root, None, what)
        return
    while stack:
        value, depth, where = stack.pop()
        if depth >= max_depth:
            raise _too_deep(what, _path(where), max_depth)
        items: Any
        if type(value) is dict:
            items = value.items()
            for key in value:
                if not key.isascii():
                    _check_scalar(key, (where, key), what)
        else:
            items = enumerate(value)
        for key, item in items:
            kind = type(item)
            if kind is str:
                if item.isascii():
                    continue
            elif kind is int:
                if INT64_MIN <= item <= INT64_MAX:
                    continue
            elif kind is dict or kind is list:
                stack.append((item, depth + 1, (where, key)))
                continue
            elif kind is bool or item is None:
                continue
            _check_scalar(item, (where, key), what)


def _check_scalar(value: Any, where: Any, what: str) -> None:
    """Raise if ``value`` (not a container) cannot be kept; the slow, rare cases."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _invalid(
                f"{what} holds a lone surrogate (\\ud800-\\udfff), which is not text",
                _path(where),
            ) from None
    elif kind is int and not INT64_MIN <= value <= INT64_MAX:
        raise _invalid(f"{what} holds {_OUTSIDE_INT64}", _path(where))
    elif kind is float and not math.isfinite(value):
        raise _invalid(f"{what} holds a number too large for a double", _path(where))
    elif kind is _Refused:
        at = where if value.key is None else (where, value.key)
        raise _invalid(f"{what} holds {value.why}", _path(at))


def _path(where: Any) -> str:
    keys = []
    while where is not None:
        where, key = where
        keys.append(key)
    path = "$"
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else wire.json_member(path, key)
    return path


def _invalid(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def _too_deep(what: str, path: str, max_depth: int) -> InvalidInput:
    return _invalid(f"{what} is nested deeper than {max_depth} levels", path)


async def read_json(
    request: web.Request, *, required: bool = True, max_bytes: int | None = None
) -> Any:
    """The JSON body; 415 unless it is JSON, 413 past the size limit (the app's, or
    ``max_bytes`` when smaller: read no further than that), 400 if malformed."""
    if not request.body_exists:
        if required:
            raise InvalidInput("a JSON body is required", [ErrorDetail("missing body", "$")])
        return None
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise web.HTTPUnsupportedMediaType(
            text=f"We accept application/json bodies, not {content_type or 'no content type'}."
        )
    if max_bytes is None:
        raw = await request.read()  # aiohttp stops at client_max_size with 413
    else:
        raw = await _read_at_most(request, max_bytes)
    return parse_json(raw)


async def read_up_to(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """The stream's bytes until its end, but no more than ``limit + 1`` (a caller refuses
    a longer one). `aiohttp.StreamReader.read` answers with what has arrived so far, so
    one call may return part of a body sent in chunks or split across packets."""
    raw = b""
    while len(raw) <= limit:
        more = await stream.read(limit + 1 - len(raw))
        if not more:
            break
        raw += more
    return raw


async def _read_at_most(request: web.Request, max_bytes: int) -> bytes:
    """The body, refused (413) as soon as more than ``max_bytes`` arrived (a body sent in
    chunks declares no length to refuse it by: `flagcore_http.body_size`)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > max_bytes:
            raise LimitExceeded(
                f"The request body is too large: over the limit of {max_bytes} bytes",
                "sdk_usage_max_body_bytes",
                max_bytes,
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def read_body(request: web.Request, cls: type[_T]) -> _T:
    """The JSON body read as ``cls`` (a class `flagcore_http.wire` knows)."""
    return structure_body(await read_json(request), cls)


def as_keywords(body: attrs.AttrsInstance) -> dict[str, Any]:
    """A request value's fields as keyword arguments, for a service method that takes
    each of them by the same name: the route hands the body on whole, so a new field
    costs its request class and the service, not the handler as well. A field the method
    does not take fails every request of the route (and
    `tests/http/test_bodies_handed_whole.py`)."""
    return {field.name: getattr(body, field.name) for field in attrs.fields(type(body))}


def structure_body(data: Any, cls: type[_T]) -> _T:
    """A parsed JSON body read as ``cls``, for a handler that also asks which keys it has."""
    if not isinstance(data, dict):
        raise InvalidInput(
            "the body must be a JSON object",
            [ErrorDetail(f"expected an object, got {wire.json_type(data)}", "$")],
        )
    return http_wire.structure(data, cls, "the body")


def _decimal(raw: str, low: int, high: int) -> int | None:
    """ASCII digits only (``str.isdigit`` also takes ``²`` and ``٣``), within bounds."""
    if not raw or len(raw) > 20 or not raw.isascii() or not raw.isdigit():
        return None
    value = int(raw)
    return value if low <= value <= high else None


def int_parameter(request: web.Request, name: str) -> int:
    """A path parameter that is an id: a whole number from 0 to 2^63-1."""
    raw = request.match_info[name]
    value = _decimal(raw, 0, wire.INT64_MAX)
    if value is None:
        raise InvalidInput(
            f"{name} must be a whole number from 0 to 2^63-1; got {raw[:40]!r}",
            [ErrorDetail("a whole number from 0 to 2^63-1", f"/params/{name}")],
        )
    return value


def query_int(
    request: web.Request, name: str, default: int | None, low: int, high: int
) -> int | None:
    """A query parameter that is a whole number from ``low`` to ``high``, or ``default``."""
    raw = request.query.get(name) if request.query_string else None
    if raw is None:
        return default
    value = _decimal(raw, low, high)
    if value is None:
        raise InvalidInput(
            f"{name} must be a whole number from {low} to {high}; got {raw[:40]!r}",
            [ErrorDetail(f"a whole number from {low} to {high}", f"/query/{name}")],
        )
    return value
