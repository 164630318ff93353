"""The strict JSON parser's fast path (issue #12): bodies with no mark of a rare case are
parsed by ``orjson.loads`` alone; bodies that only look rare (marks inside strings, names
like ``page-100``) still parse to the same value; real rare cases still get the strict
400 naming the path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flagcore.errors import InvalidInput
from flagcore_http.bodies import MAX_DEPTH, parse_json


def _nested(levels: int, inner: Any = 1) -> Any:
    value = inner
    for _ in range(levels - 1):
        value = [value]
    return [value] if levels else value


LOOK_RARE_BUT_ARE_FINE = [
    {"start": "2026-01-01T00:00:00Z", "colons": "a:b:c", "escaped": "\\u003a", "k:": {"k": 1}},
    {"same key": {"x": 1}, "nested": {"same key": {"x": 2}}, "list": [{"x": 1}, {"x": 1}]},
    {"toggles": {f"made-up-{n}": {"yes": 1, "no": 2} for n in range(2000)}},
    {"page-100": {"yes": 1}, "e-000": 1, "NaN": "Infinity", "x": "1e400"},
    {"brackets": "[[[[[[[[[[{{{{{{{{" * 20, "closing": "]]]]}}}}"},
    {"escaped backslash": "\\ud800 is text here"},
    {"accent": "\u00e9", "pair": "\U0001f600", "cjk": "\u65e5\u672c"},
    {"big": 9223372036854775807, "small": -9223372036854775808, "float": 1.7976931348623157e308},
    {"exponent": 1e-300, "digits": 123456789012345678, "neg": -0.0},
    _nested(MAX_DEPTH),
    [_nested(MAX_DEPTH - 1, "]]]]")] * 3,
    "just a string",
    12,
    None,
]


@pytest.mark.parametrize("value", LOOK_RARE_BUT_ARE_FINE)
def test_bodies_that_look_rare_but_are_fine_parse_to_their_value(value: Any) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert parse_json(raw) == json.loads(raw)
    assert parse_json(raw.decode("utf-8")) == json.loads(raw)
    escaped = json.dumps(value).encode("ascii")  # \\uXXXX escapes instead of UTF-8
    assert parse_json(escaped) == json.loads(raw)


REFUSED = [
    (b'{"a": {"b": [1, 2, 9223372036854775808]}}', "$.a.b[2]", "integer outside"),
    # orjson keeps integers up to 2^64 - 1 and makes larger ones floats: neither gets in.
    (b"[18446744073709551615]", "$[0]", "integer outside"),
    (b'{"a": 18446744073709551616}', "$.a", "integer outside"),
    (b'{"a": [1e400]}', "$.a[0]", "too large for a double"),
    (b'{"a": -1E+309}', "$.a", "too large for a double"),
    (b'{"a": NaN}', "$.a", "NaN"),
    (b'{"a": [Infinity]}', "$.a[0]", "Infinity"),
    (b'{"a": "\\ud800"}', "$.a", "lone surrogate"),
    (b'{"\\uDC00": 1}', "$", "lone surrogate"),
    (json.dumps({"deep": _nested(MAX_DEPTH)}).encode(), "$.deep", "nested deeper"),
    (b'{"a": [1, 2}', "$", "not valid JSON"),
    (b"", "$", "not valid JSON"),
]

# A key twice: orjson keeps the last silently, JSON parsers disagree on which one wins;
# refused on the fast path and the strict walk alike, naming the key (issue 24 #5).
KEY_TWICE = [
    (b'{"type": "client", "type": "admin"}', "$.type", "type"),
    (b'{"a" : [{"k": 1, "x": {"k": 1}, "k" : 2}]}', "$.a[0].k", "k"),
    (b'{"a": 1, "a": 2, "b": "\\u003a"}', "$.a", "a"),
    (b'{"n": 1234567890123456789, "k": 1, "k": 1}', "$.k", "k"),
    (b'{"\\u0061": 1, "a": 2}', "$.a", "a"),
    (b'{"t": "10:00", "big": [{"x": 1}], "x": {"y": 1, "y": 1}}', "$.x.y", "y"),
]


@pytest.mark.parametrize(("raw", "path", "key"), KEY_TWICE)
def test_a_key_twice_in_one_object_is_refused_naming_it(raw: bytes, path: str, key: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_json(raw)
    assert f'the key "{key}" twice' in refused.value.message
    assert [detail.path for detail in refused.value.details] == [path]


@pytest.mark.parametrize(("raw", "path", "why"), REFUSED)
def test_rare_cases_are_still_400_naming_the_path(raw: bytes, path: str, why: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_json(raw)
    assert why in refused.value.message
    assert refused.value.details[0].path.startswith(path)


def test_a_str_argument_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(InvalidInput, match="lone surrogate"):
        parse_json('{"a": "\ud800"}')
