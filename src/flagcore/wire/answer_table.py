"""The table of the answers: each answer class's attributes and the JSON keys they travel under.

An answer is a typed value (an attrs class) registered here with `answer`: one row per
attribute, in the class's order, which is the order of the keys written. From that one
table come its JSON writer (generated at import, as `flagcore.wire.writing` generates the
model's: one dict display, no per-field dispatch) and its JSON Schema
(`flagcore.wire.schema.SchemaSet` reads `ANSWER_FIELDS`), so what the OpenAPI document
says of an answer cannot differ from what is sent.

An answer's keys are always present (null for an empty optional value), except those
rows marked ``omitted_when_none``: Unleash leaves such a key out rather than sending null.
A row marked ``spread`` holds another answer whose keys are written into this one's
object (nothing when it is None): an explanation answered with the environment asked
about beside its own keys, a variant's trace beside the variant chosen. A spread row may
also hold a mapping of scalars, whose keys are the data's own (an event's new sort order
by strategy id): its schema then allows other keys of that value's type.
"""

from __future__ import annotations

import datetime as dt
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from flagcore.wire import writing
from flagcore.wire.fields import FIELDS

__all__ = [
    "ANSWER_FIELDS",
    "AnswerField",
    "answer",
    "iso_time",
    "spread_mapping",
    "write_answer",
    "writer_of",
]

_C = TypeVar("_C", bound=type)


def iso_time(value: dt.datetime | None) -> str | None:
    """A time as Unleash writes it: ISO 8601 in UTC with milliseconds (``...Z``), or null."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.frozen
class AnswerField:
    """One attribute of an answer class: its JSON key, whether a None leaves the key out,
    and what the schema adds to its type's (a range a later check holds it to)."""

    attribute: str
    key: str
    omitted_when_none: bool = False
    schema: Mapping[str, Any] | None = None
    spread: bool = False  # an answer whose keys are written into the holder's object


ANSWER_FIELDS: dict[type, tuple[AnswerField, ...]] = {}
_WRITERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
# What generated writers call: the model's fast writers, the answers', `iso_time`.
_NAMESPACE: dict[str, Any] = {"iso_time": iso_time}
for _model_class in FIELDS:
    _NAMESPACE[f"w_{_model_class.__name__}"] = writing.writer_of(_model_class)


def answer(*rows: AnswerField | tuple[str, str]) -> Callable[[_C], _C]:
    """Register the decorated attrs class as an answer with these rows (one per attribute,
    in its order: a class and its table that disagree fail at import)."""

    def register(cls: _C) -> _C:
        table = tuple(row if isinstance(row, AnswerField) else AnswerField(*row) for row in rows)
        if tuple(f.attribute for f in table) != tuple(f.name for f in attrs.fields(cls)):
            raise TypeError(f"the answer table of {cls.__name__} does not match its attributes")
        ANSWER_FIELDS[cls] = table
        writer = _generate(cls, table)
        _WRITERS[cls] = writer
        _NAMESPACE[f"w_{cls.__name__}"] = writer
        return cls

    return register


def writer_of(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The JSON writer of an answer class (a fresh dict per call, callers may change it)."""
    return _WRITERS[cls]


def write_answer(value: Any) -> dict[str, Any]:
    """``value``, an answer, as JSON (Python's ``dict``/``list``/scalars)."""
    return _WRITERS[type(value)](value)


_NAMESPACE["write_answer"] = write_answer


_SCALARS = (str, bool, int, float)


def _nested(type_: Any) -> str:
    if type_ not in FIELDS and type_ not in ANSWER_FIELDS:
        raise TypeError(f"{type_!r} is neither a model class nor an answer")
    return f"w_{type_.__name__}"


def _expression(got: str, type_: Any) -> str:
    """Python source writing the value ``got`` of type ``type_`` as JSON."""
    if _is_union(type_):
        inner = [arg for arg in typing.get_args(type_) if arg is not type(None)]
        if all(arg in _SCALARS for arg in inner):  # a boolean or "unknown": as it is
            return got
        if len(inner) > 1:  # one of several answers: each written by its own writer
            if type(None) in typing.get_args(type_):
                return f"None if {got} is None else write_answer({got})"
            return f"write_answer({got})"
        written = _expression(got, inner[0])
        return written if written == got else f"None if {got} is None else {written}"
    origin, args = typing.get_origin(type_), typing.get_args(type_)
    if type_ in _SCALARS or type_ is Any:
        return got
    if type_ is dt.datetime:
        return f"iso_time({got})"
    if isinstance(type_, type) and issubclass(type_, enum.Enum):
        return f"{got}.value"
    if attrs.has(type_):
        return f"{_nested(type_)}({got})"
    if origin is tuple and args[1:] == (Ellipsis,):
        item = args[0]
        if attrs.has(item):
            return f"[{_nested(item)}(x) for x in {got}]"
        if _is_union(item):
            return f"[write_answer(x) for x in {got}]"
        return f"list({got})"
    if origin in (Mapping, dict):
        if args[1] is Any:
            return got
        if args[1] in _SCALARS:
            return f"dict({got})"
        return f"{{k: {_expression('v', args[1])} for k, v in {got}.items()}}"
    raise TypeError(f"no answer writer for {type_!r}")


def spread_mapping(type_: Any) -> Any:
    """The value type of a ``spread`` row holding a mapping of scalars, else None."""
    if typing.get_origin(type_) in (Mapping, dict):
        value = typing.get_args(type_)[1]
        if value in _SCALARS:
            return value
        raise TypeError(f"a spread mapping holds scalars, not {type_!r}")
    return None


def _spread_class(type_: Any) -> type:
    """The answer class a ``spread`` row holds (``X`` or ``X | None``)."""
    kinds = (
        [a for a in typing.get_args(type_) if a is not type(None)] if _is_union(type_) else [type_]
    )
    if len(kinds) != 1 or kinds[0] not in ANSWER_FIELDS:
        raise TypeError(f"a spread row holds one answer class, not {type_!r}")
    found: type = kinds[0]
    return found


def _is_union(type_: Any) -> bool:
    return typing.get_origin(type_) in (typing.Union, types.UnionType)


def _generate(cls: type, table: tuple[AnswerField, ...]) -> Callable[[Any], dict[str, Any]]:
    hints = typing.get_type_hints(cls)
    lines = [f"def w_{cls.__name__}(value):", "    out = {"]
    opened = True
    for row in table:
        if row.spread:
            if opened:
                lines.append("    }")
                opened = False
            if spread_mapping(hints[row.attribute]) is not None:
                lines.append(f"    out.update(value.{row.attribute})")
                continue
            spread = _spread_class(hints[row.attribute])
            lines.append(f"    if value.{row.attribute} is not None:")
            lines.append(f"        out.update({_nested(spread)}(value.{row.attribute}))")
            continue
        written = _expression(f"value.{row.attribute}", hints[row.attribute])
        if row.omitted_when_none:
            if opened:
                lines.append("    }")
                opened = False
            lines.append(f"    if value.{row.attribute} is not None:")
            lines.append(f"        out[{row.key!r}] = {written}")
        elif opened:
            lines.append(f"        {row.key!r}: {written},")
        else:
            lines.append(f"    out[{row.key!r}] = {written}")
    if opened:
        lines.append("    }")
    lines.append("    return out")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<answer writer of {cls.__name__}>", "exec"), _NAMESPACE)
    writer: Callable[[Any], dict[str, Any]] = _NAMESPACE[f"w_{cls.__name__}"]
    return writer
