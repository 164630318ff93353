"""Fast readers for well-formed client payloads: the common case, five times faster.

`flagcore.wire.converter`'s cattrs converter is the reference reader: it validates and
reports every problem with a JSON path. Loading 20,000 flags through it costs over a
second, so the wire first tries these readers, which accept exactly the well-typed shapes
and raise `NotFast` at the first surprise; the converter then reads that item again and
explains what is wrong. Both must build equal values from the same input (a property
test in ``tests/core/test_codec.py`` checks it).

The readers are generated from `flagcore.wire.fields.FIELDS` when this module is
imported: one straight-line function per model class, as fast as a hand-written one
(no loop over fields at run time), so a field added to the table is read with no
further edit. Each field's check follows its type in the model (see `_read_expression`).
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast

import attrs

from flagcore.context import context_value
from flagcore.model import Constraint, Dependency, Flag, Segment, Variant
from flagcore.wire.fields import (
    CASE_INSENSITIVE,
    CONTEXT_NAME,
    FIELDS,
    INVERTED,
    OPERATOR,
    VALUE,
    WireField,
)

__all__ = [
    "NotFast",
    "as_bool",
    "as_bool_or",
    "as_int",
    "as_int_or",
    "as_ints",
    "as_list",
    "as_opt_int",
    "as_opt_str",
    "as_parameters",
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


def as_int(value: Any) -> int:
    # The converter also reads 3.0 as 3 and checks the 64-bit range: it explains.
    if type(value) is not int:
        raise NotFast
    return value


def as_int_or(value: Any, default: int) -> int:
    if value is None:
        return default
    if type(value) is not int:
        raise NotFast
    return value


def as_opt_int(value: Any) -> int | None:
    if value is None or type(value) is int:
        return value
    raise NotFast


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


def as_ints(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise NotFast
    for item in value:
        if type(item) is not int:
            raise NotFast
    return tuple(value)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise NotFast
    return value


def as_parameters(value: Any) -> Mapping[str, str]:
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


def constraint_fields(data: Any) -> tuple[str, str, str | None, bool, bool]:
    """A plainly typed constraint's contextName, operator, value, inverted and
    caseInsensitive (its values are read by the caller, who knows what it needs)."""
    if type(data) is not dict:
        raise NotFast
    get = data.get
    context_name = get(CONTEXT_NAME)
    operator = get(OPERATOR)
    value = get(VALUE)
    inverted = get(INVERTED, False)
    case_insensitive = get(CASE_INSENSITIVE, False)
    if (
        type(context_name) is not str
        or type(operator) is not str
        or (value is not None and type(value) is not str)
        or type(inverted) is not bool
        or type(case_insensitive) is not bool
    ):
        raise NotFast
    return context_name, operator, value, inverted, case_insensitive


# --- the generated readers -------------------------------------------------------------


def _reader_name(cls: type) -> str:
    return f"read_{cls.__name__}"


def _read_expression(field: WireField, type_: Any, names: dict[str, Any]) -> str:
    """Python source reading ``field`` from the dict ``data`` (its ``.get`` is ``get``)."""
    got = f"get({field.key!r})"
    default = field.default
    optional = False
    args = typing.get_args(type_)
    if typing.get_origin(type_) in (typing.Union, types.UnionType):
        (type_,) = [arg for arg in args if arg is not type(None)]
        optional = True
        args = typing.get_args(type_)
    origin = typing.get_origin(type_)
    if type_ is str or type_ is bool or type_ is int:
        kind = type_.__name__
        if optional:
            return f"as_opt_{kind}({got})"
        if field.required:
            return f"as_{kind}({got})"
        return f"as_{kind}_or({got}, {default!r})"
    if isinstance(type_, type) and issubclass(type_, enum.Enum):
        members = f"_members_{type_.__name__}"
        names[members] = {member.value: member for member in type_}
        value = f"{members}.get(as_str_or({got}, {default.value!r}))"
        return f"_not_none({value})"
    if origin is tuple and args[1:] == (Ellipsis,):
        (item,) = args[:1]
        if item is str:
            return f"as_strings({got})"
        if item is int:
            return f"as_ints({got})"
        if attrs.has(item):
            return f"tuple([{_reader_name(item)}(x) for x in as_list({got})])"
    if origin is Mapping and args == (str, str):
        return f"as_parameters({got})"
    if attrs.has(type_) and optional:
        return f"_read_optional({_reader_name(type_)}, {got})"
    raise TypeError(f"no fast reader for {field.attribute}: {type_!r}")


def _not_none(value: Any) -> Any:
    """An enum value not among its members: let the converter say which are."""
    if value is None:
        raise NotFast
    return value


def _read_optional(read: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else read(value)


def _generate() -> dict[str, Any]:
    names: dict[str, Any] = {
        name: value
        for name, value in globals().items()
        if name.startswith("as_") or name in ("NotFast", "_not_none", "_read_optional")
    }
    sources = []
    for cls, fields in FIELDS.items():
        hints = typing.get_type_hints(cls)
        names[cls.__name__] = cls
        arguments = ",\n        ".join(
            _read_expression(field, hints[field.attribute], names) for field in fields
        )
        sources.append(
            f"def {_reader_name(cls)}(data):\n"
            "    if type(data) is not dict:\n"
            "        raise NotFast\n"
            "    get = data.get\n"
            f"    return {cls.__name__}(\n        {arguments},\n    )\n"
        )
    exec(compile("\n".join(sources), f"<{__name__} generated>", "exec"), names)
    return names


_GENERATED = _generate()

read_flag = cast(Callable[[Any], Flag], _GENERATED[_reader_name(Flag)])
read_flag.__doc__ = """A client-features flag, or `NotFast`."""
read_segment = cast(Callable[[Any], Segment], _GENERATED[_reader_name(Segment)])
_read_constraint = cast(Callable[[Any], Constraint], _GENERATED[_reader_name(Constraint)])
_read_variant = cast(Callable[[Any], Variant], _GENERATED[_reader_name(Variant)])
_read_dependency = cast(Callable[[Any], Dependency], _GENERATED[_reader_name(Dependency)])


def read_constraints(data: Any) -> tuple[Constraint, ...]:
    return tuple([_read_constraint(c) for c in as_list(data)])


def read_variants(data: Any) -> tuple[Variant, ...]:
    return tuple([_read_variant(v) for v in as_list(data)])


def read_dependencies(data: Any) -> tuple[Dependency, ...]:
    return tuple([_read_dependency(d) for d in as_list(data)])
