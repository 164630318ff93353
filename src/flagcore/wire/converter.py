"""The reference reader and writer: a strict cattrs converter built from the wire table.

It reads what the fast readers refuse and says what is wrong with a JSON path that names
the keys the client sent (``$.constraints[0].contextName``). It knows the model classes
only; an adapter that reads classes of its own (the HTTP layer's request bodies) takes
``converter.copy()`` and teaches the copy with `register_class`, so nothing changes the
converter every other package shares.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from flagcore.context import context_value
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import FlagType, WeightType
from flagcore.wire.fields import FIELDS, WIRE_NAMES

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ERROR_DETAILS",
    "OutOfRange",
    "UnknownKey",
    "WrongType",
    "converter",
    "enum_hook",
    "error_details",
    "json_member",
    "json_type",
    "register_class",
    "structure",
    "structure_with",
]

_T = TypeVar("_T")

# Integers must fit in a signed 64-bit integer: what SQLite, PostgreSQL's bigint and
# orjson store, and what every SDK's JSON reader can hold.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# What an SQL ``integer`` column holds in both stores (PostgreSQL's is 32-bit): the range
# of every stored number kept in one (sort orders, an SDK's metrics interval).
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
MAX_ERROR_DETAILS = 50
_JSON_TYPES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    tuple: "an array",
    dict: "an object",
    type(None): "null",
}


def json_type(value: object) -> str:
    """What a value is, in JSON's words (``a string``, ``an array``, ...)."""
    named = _JSON_TYPES.get(type(value))
    if named is not None:
        return named
    if isinstance(value, Mapping):
        return "an object"
    return f"a Python {type(value).__name__}"


class WrongType(TypeError):
    """A value of the wrong JSON type; the message says what was expected and what came."""

    def __init__(self, expected: str, value: object) -> None:
        super().__init__(f"expected {expected}, got {json_type(value)}")


class OutOfRange(ValueError):
    """A number the right type but outside what can be stored."""


class UnknownKey(ValueError):
    """A key a closed class does not name (see `register_class`)."""

    def __init__(self, key: object, known: tuple[str, ...], hint: str) -> None:
        shown = repr(str(key)[:100])
        said = f"unknown field {shown} ({', '.join(known)})"
        super().__init__(f"{said}; {hint}" if hint else said)


def _strict_str(value: Any, _type: Any) -> str:
    if type(value) is str:
        return value
    raise WrongType("a string", value)


def _strict_bool(value: Any, _type: Any) -> bool:
    if type(value) is bool:
        return value
    raise WrongType("a boolean", value)


def _strict_int(value: Any, _type: Any) -> int:
    # JSON has one number type: 3.0 is the integer 3 (as in JSON Schema), 3.5 is not.
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise WrongType("an integer", value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise OutOfRange("expected an integer between -2^63 and 2^63-1")
    return value


def _noted(exc: Exception, index: int | str, item_type: Any) -> Exception:
    exc.add_note(cattrs.IterableValidationNote(f"@ {index!r}", index, item_type))
    return exc


def _is_homogeneous_tuple(type_: Any) -> bool:
    args = get_args(type_)
    return get_origin(type_) is tuple and len(args) == 2 and args[1] is Ellipsis


def _homogeneous_tuple(
    type_: Any, converter: cattrs.Converter
) -> Callable[[Any, Any], tuple[Any, ...]]:
    """A JSON array, item by item; a string or an object is not a list of its parts.

    cattrs passes the converter that asks (a copy, too), so items are read by its hooks."""
    item_type = get_args(type_)[0]

    def structure_tuple(value: Any, _type: Any) -> tuple[Any, ...]:
        if type(value) is not list and type(value) is not tuple:
            raise WrongType("an array", value)
        structure_item = converter.get_structure_hook(item_type)
        items, problems = [], []
        for index, item in enumerate(value):
            try:
                items.append(structure_item(item, item_type))
            except Exception as exc:  # every problem is reported, with its index
                problems.append(_noted(exc, index, item_type))
        if problems:
            raise cattrs.IterableValidationError(f"While structuring {type_!r}", problems, type_)
        return tuple(items)

    return structure_tuple


def enum_hook(enum_type: type[enum.Enum]) -> Callable[[Any, Any], enum.Enum]:
    """A strict reader of one enum's values. Hooks for classes win over hooks for
    subclasses, so each str enum needs its own (or it would be read as any string)."""
    allowed = ", ".join(str(member.value) for member in enum_type)

    def structure_enum(value: Any, _type: Any) -> enum.Enum:
        if type(value) is str or isinstance(value, enum_type):
            try:
                return enum_type(value)
            except ValueError:
                pass
        shown = repr(value) if type(value) is str else json_type(value)
        raise ValueError(f"expected one of {allowed}, got {shown[:80]}")

    return structure_enum


def _parameters(value: Any, _type: Any) -> Mapping[str, str]:
    """Parameters are strings in Unleash; numbers and booleans are read as Unleash writes
    them (``25`` → ``"25"``), null as missing; an array or an object is refused."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WrongType("an object", value)
    out: dict[str, str] = {}
    problems: list[Exception] = []
    for key, raw in value.items():
        text = context_value(raw)
        if text is not None:
            out[str(key)] = text
        elif raw is not None:
            problems.append(_noted(WrongType("a string", raw), str(key), str))
    if problems:
        raise cattrs.IterableValidationError("While structuring parameters", problems, dict)
    return out


def register_class(
    converter: cattrs.Converter,
    cls: type,
    renames: Mapping[str, str] | None = None,
    *,
    closed: str | None = None,
) -> None:
    """Teach ``converter`` an attrs class whose keys differ (``renames``: attribute → key).

    Unleash sends null for fields it leaves at their default (an empty list, mostly), so
    null in a field that has a default means that default; in a required field it is
    refused like any other wrong type.

    Keys the class does not name are ignored (Unleash's bodies carry more than a reader
    keeps), unless ``closed`` is given: then the first one is refused at the object's
    path, naming the keys it may have, followed by ``closed`` when not empty (where such
    a value goes instead). `flagcore.wire.SchemaSet` says the same of a closed class.
    """
    renames = renames or {}
    overrides = {name: override(rename=key) for name, key in renames.items()}
    structure_fn: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls,
        converter,
        **overrides,  # type: ignore[arg-type]
    )
    nullable = frozenset(
        renames.get(field.name, field.name)
        for field in attrs.fields(cls)
        if field.default is not attrs.NOTHING
    )

    keys = tuple(renames.get(field.name, field.name) for field in attrs.fields(cls))
    known = frozenset(keys) if closed is not None else None

    def structure_tolerating_nulls(data: Any, type_: Any) -> Any:
        # Cheap tests first (a body is read per request): a dict, no null in it at all.
        if type(data) is not dict and not isinstance(data, Mapping):
            raise WrongType("an object", data)
        if known is not None and not known.issuperset(data):
            raise UnknownKey(next(key for key in data if key not in known), keys, closed or "")
        if nullable and None in data.values():
            data = {
                key: value for key, value in data.items() if not (value is None and key in nullable)
            }
        return structure_fn(data, type_)

    converter.register_structure_hook(cls, structure_tolerating_nulls)
    converter.register_unstructure_hook(
        cls,
        make_dict_unstructure_fn(cls, converter, **overrides),  # type: ignore[arg-type]
    )


def _core_converter() -> cattrs.Converter:
    made = cattrs.Converter(forbid_extra_keys=False, omit_if_default=False)
    made.register_structure_hook(str, _strict_str)
    made.register_structure_hook(bool, _strict_bool)
    made.register_structure_hook(int, _strict_int)
    for enum_type in (WeightType, FlagType):
        made.register_structure_hook(enum_type, enum_hook(enum_type))
        made.register_unstructure_hook(enum_type, lambda value: value.value)
    made.register_structure_hook_func(lambda t: t == Mapping[str, str], _parameters)
    made.register_structure_hook_factory(_is_homogeneous_tuple, _homogeneous_tuple)
    # The table lists inner classes before the classes holding them, whose hooks are made
    # from theirs.
    for cls in FIELDS:
        register_class(made, cls, WIRE_NAMES[cls])
    return made


converter = _core_converter()


def error_details(
    exc: BaseException, root: str = "$", names: Mapping[type, Mapping[str, str]] = WIRE_NAMES
) -> list[ErrorDetail]:
    """Flatten a cattrs failure into messages whose paths name the JSON keys the client sent
    (``$.constraints[0].contextName``, not the attribute ``context_name``); ``names`` maps
    each class to its renamed attributes."""
    details: list[ErrorDetail] = []
    _collect_details(exc, root, details, names)
    return details


def _collect_details(
    exc: BaseException,
    path: str,
    out: list[ErrorDetail],
    names: Mapping[type, Mapping[str, str]],
) -> None:
    if isinstance(exc, cattrs.ClassValidationError):
        renames = names.get(exc.cl, {})
        with_notes, without = exc.group_exceptions()
        for sub, attribute in with_notes:
            key = renames.get(attribute.name, attribute.name)
            _collect_details(sub, json_member(path, key), out, names)
        for sub in without:
            _collect_details(sub, path, out, names)
    elif isinstance(exc, cattrs.IterableValidationError):
        with_index, without = exc.group_exceptions()
        for sub, item in with_index:
            index = item.index
            where = f"{path}[{index}]" if isinstance(index, int) else json_member(path, index)
            _collect_details(sub, where, out, names)
        for sub in without:
            _collect_details(sub, path, out, names)
    else:
        out.append(ErrorDetail(_problem(exc), path))


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def json_member(path: str, key: str) -> str:
    """``path.key``, or ``path["odd key"]`` when the key is not a plain name."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key[:100])}]"


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, (WrongType, OutOfRange, ValueError)) and exc.args:
        return str(exc.args[0])
    return f"invalid value ({type(exc).__name__})"


def structure(data: Any, cls: type[_T], what: str = "the body") -> _T:
    """Read ``data`` as ``cls`` (a model value); raises `InvalidInput` whose details name
    JSON paths."""
    return structure_with(converter, WIRE_NAMES, data, cls, what)


def structure_with(
    converter: cattrs.Converter,
    names: Mapping[type, Mapping[str, str]],
    data: Any,
    cls: type[_T],
    what: str,
) -> _T:
    """`structure` with another converter (a copy that knows more classes) and its names."""
    try:
        return converter.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        details = error_details(exc, names=names)
        if len(details) > MAX_ERROR_DETAILS:
            # A body of 100,000 wrong items must not answer with 100,000 messages.
            more = len(details) - MAX_ERROR_DETAILS
            details = [*details[:MAX_ERROR_DETAILS], ErrorDetail(f"and {more} more problems")]
        first = details[0]
        raise InvalidInput(
            f"{what} could not be read: {first.path}: {first.message}", details
        ) from exc
