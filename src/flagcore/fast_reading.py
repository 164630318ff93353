"""Hand-written readers for well-formed client payloads: the common case, five times faster.

`flagcore.codec`'s cattrs converter is the reference reader: it validates and reports
every problem with a JSON path. Loading 20,000 flags through it costs over a second, so
the codec first tries these readers, which accept exactly the well-typed shapes and
raise `NotFast` at the first surprise; the converter then reads that item again and
explains what is wrong. Both must build equal values from the same input (a property
test in ``tests/core/test_codec.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flagcore.context import context_value
from flagcore.model import (
    Constraint,
    Dependency,
    Flag,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)

__all__ = [
    "NotFast",
    "as_bool",
    "as_bool_or",
    "as_list",
    "as_opt_str",
    "as_str",
    "as_str_or",
    "as_strings",
    "constraint_fields",
    "read_constraints",
    "read_dependencies",
    "read_flag",
    "read_segment",
    "read_variants",
]


class NotFast(Exception):
    """The item is not plainly well-formed; let the converter read (and judge) it."""


_WEIGHT_TYPES = {"variable": WeightType.VARIABLE, "fix": WeightType.FIX}


def as_str(value: Any) -> str:
    if type(value) is not str:
        raise NotFast
    return value


def as_opt_str(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise NotFast


def as_str_or(value: Any, default: str) -> str:
    # Unleash sends null for some optional fields; null means the default.
    if value is None:
        return default
    if type(value) is not str:
        raise NotFast
    return value


def as_bool_or(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if type(value) is not bool:
        raise NotFast
    return value


def as_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise NotFast
    return value


def as_strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise NotFast
    # str.join checks every item in C and refuses anything but strings: 5x quicker than
    # comparing their types one by one, and these lists run to hundreds of values.
    try:
        "".join(value)
    except TypeError:
        raise NotFast from None
    return tuple(value)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise NotFast
    return value


def constraint_fields(data: Any) -> tuple[str, str, str | None, bool, bool]:
    """A plainly typed constraint's contextName, operator, value, inverted and
    caseInsensitive (its values are read by the caller, who knows what it needs)."""
    if type(data) is not dict:
        raise NotFast
    get = data.get
    context_name = get("contextName")
    operator = get("operator")
    value = get("value")
    inverted = get("inverted", False)
    case_insensitive = get("caseInsensitive", False)
    if (
        type(context_name) is not str
        or type(operator) is not str
        or (value is not None and type(value) is not str)
        or type(inverted) is not bool
        or type(case_insensitive) is not bool
    ):
        raise NotFast
    return context_name, operator, value, inverted, case_insensitive


def _constraint(data: Any) -> Constraint:
    context_name, operator, value, inverted, case_insensitive = constraint_fields(data)
    return Constraint(
        context_name, operator, as_strings(data.get("values")), value, inverted, case_insensitive
    )


def _payload(data: Any) -> Payload | None:
    if data is None:
        return None
    if type(data) is not dict or "type" not in data or "value" not in data:
        raise NotFast
    return Payload(as_str(data["type"]), as_str(data["value"]))


def _override(data: Any) -> Override:
    if type(data) is not dict or "contextName" not in data:
        raise NotFast
    return Override(as_str(data["contextName"]), as_strings(data.get("values")))


def _variant(data: Any) -> Variant:
    if type(data) is not dict or "name" not in data:
        raise NotFast
    get = data.get
    weight = get("weight", 0)
    if type(weight) is not int:
        raise NotFast
    weight_type = _WEIGHT_TYPES.get(as_str_or(get("weightType"), "variable"))
    if weight_type is None:
        raise NotFast
    return Variant(
        as_str(data["name"]),
        weight,
        weight_type,
        as_str_or(get("stickiness"), "default"),
        _payload(get("payload")),
        tuple(_override(o) for o in as_list(get("overrides"))),
    )


def _parameters(value: Any) -> Mapping[str, str]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise NotFast
    for item in value.values():
        if type(item) is not str:
            if any(type(v) in (list, dict) for v in value.values()):
                raise NotFast  # refused by the converter, which says where
            # Numbers and booleans are read as text; the converter does the same.
            return {str(k): t for k, v in value.items() if (t := context_value(v)) is not None}
    return dict(value)


def _int_or_none(value: Any) -> int | None:
    if value is None or type(value) is int:
        return value
    raise NotFast


def _strategy(data: Any) -> Strategy:
    if type(data) is not dict or "name" not in data:
        raise NotFast
    get = data.get
    segments = as_list(get("segments"))
    for segment in segments:
        if type(segment) is not int:
            raise NotFast
    return Strategy(
        as_str(data["name"]),
        _parameters(get("parameters")),
        tuple(_constraint(c) for c in as_list(get("constraints"))),
        tuple(segments),
        tuple(_variant(v) for v in as_list(get("variants"))),
        as_bool(get("disabled", False)),
        as_opt_str(get("id")),
        as_opt_str(get("title")),
        _int_or_none(get("sortOrder")),
    )


def _dependency(data: Any) -> Dependency:
    if type(data) is not dict or "feature" not in data:
        raise NotFast
    return Dependency(
        as_str(data["feature"]),
        as_bool_or(data.get("enabled"), True),
        as_strings(data.get("variants")),
    )


def read_flag(data: Any) -> Flag:
    """A client-features flag, or `NotFast`."""
    if type(data) is not dict or "name" not in data:
        raise NotFast
    get = data.get
    return Flag(
        as_str(data["name"]),
        as_bool(get("enabled", False)),
        as_str_or(get("type"), "release"),
        as_opt_str(get("description")),
        as_str_or(get("project"), "default"),
        as_bool_or(get("stale"), False),
        as_bool_or(get("impressionData"), False),
        tuple(_strategy(s) for s in as_list(get("strategies"))),
        tuple(_variant(v) for v in as_list(get("variants"))),
        tuple(_dependency(d) for d in as_list(get("dependencies"))),
    )


def read_segment(data: Any) -> Segment:
    """A segment, or `NotFast`."""
    if type(data) is not dict or type(data.get("id")) is not int:
        raise NotFast
    get = data.get
    return Segment(
        data["id"],
        as_str(get("name", "")),
        tuple(_constraint(c) for c in as_list(get("constraints"))),
        as_opt_str(get("description")),
        as_opt_str(get("project")),
    )


def read_constraints(data: Any) -> tuple[Constraint, ...]:
    return tuple(_constraint(c) for c in as_list(data))


def read_variants(data: Any) -> tuple[Variant, ...]:
    return tuple(_variant(v) for v in as_list(data))


def read_dependencies(data: Any) -> tuple[Dependency, ...]:
    return tuple(_dependency(d) for d in as_list(data))
