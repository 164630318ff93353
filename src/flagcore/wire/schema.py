"""JSON Schemas (2020-12, as OpenAPI 3.1 uses them) derived from the wire's classes.

The schema of a class is read from the same things its reader is built from: the class's
attributes and their types, and its table of JSON keys (`flagcore.wire.fields.FIELDS` for
the model, an adapter's own mapping for its body classes). A field added to a class and
its table appears in the schema with no other change, so the published contract cannot
drift from what the readers accept.

What the readers accept, the schema says: a field with a default may be missing or null
(Unleash sends null for fields left at their default; see `register_class`); integers are
64-bit; a string enum lists its values; strategy parameters are strings, numbers or
booleans (read as Unleash writes them). Extra keys are allowed, as the readers ignore them.

What an answer sends, the schema of an answer class says (`flagcore.wire.answer_table`):
every key of its table is present (but those left out when None), null only where the type
allows None, times are ISO 8601 strings, and no other key is sent (the schema is closed, so
a writer and its schema cannot part), but the data's own keys of a spread mapping, whose
values the schema types.
"""

from __future__ import annotations

import datetime as dt
import enum
import types
import typing
from collections.abc import Collection, Mapping
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from flagcore.wire.answer_table import ANSWER_FIELDS, spread_mapping
from flagcore.wire.converter import INT64_MAX, INT64_MIN
from flagcore.wire.fields import WIRE_NAMES

__all__ = ["JsonSchema", "SchemaSet", "schema_ref"]

JsonSchema = dict[str, Any]

# The one ``Mapping[str, str]`` of the model: strategy parameters (see the converter's
# ``_parameters``: numbers and booleans are read as their text, null as missing).
_PARAMETER_VALUE: JsonSchema = {"type": ["string", "number", "boolean", "null"]}
_INTEGER: JsonSchema = {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX}


def schema_ref(name: str) -> JsonSchema:
    """A reference to the component ``name`` of an OpenAPI document."""
    return {"$ref": f"#/components/schemas/{name}"}


class SchemaSet:
    """The schemas of some attrs classes, each once, as OpenAPI components.

    ``names`` maps each class to its renamed attributes (attribute → JSON key), as the
    readers have them; the model's table is always included. ``refined`` adds to the
    schema of some attributes what a type cannot say and a later check enforces (a name's
    pattern), keyed by class and attribute; ``titles`` names a class's component when the
    name is not the class's (Unleash's own schema name); ``closed`` are the classes whose
    reader refuses keys it does not name (`flagcore.wire.register_class`), so their
    schema allows no other. `of` answers a type with a schema that refers to the
    components it needs, adding them to `components`.
    """

    def __init__(
        self,
        names: Mapping[type, Mapping[str, str]] | None = None,
        refined: Mapping[type, Mapping[str, JsonSchema]] | None = None,
        titles: Mapping[type, str] | None = None,
        closed: Collection[type] = (),
    ) -> None:
        self._names: dict[type, Mapping[str, str]] = {**WIRE_NAMES, **(names or {})}
        self._refined = refined or {}
        self._titles = titles or {}
        self._closed = frozenset(closed)
        self.components: dict[str, JsonSchema] = {}
        self._owners: dict[str, type] = {}

    def of(self, type_: Any) -> JsonSchema:
        """The schema of a JSON value read as ``type_`` (a class, ``tuple[X, ...]``, ...)."""
        if type_ is Any or type_ is object:
            return {}
        if attrs.has(type_):
            return self._component(type_)
        if isinstance(type_, type) and issubclass(type_, enum.Enum):
            return {"type": "string", "enum": [str(member.value) for member in type_]}
        if type_ is bool:
            return {"type": "boolean"}
        if type_ is int:
            return dict(_INTEGER)
        if type_ is float:
            return {"type": "number"}
        if type_ is str:
            return {"type": "string"}
        if type_ is dt.datetime:
            return {"type": "string", "format": "date-time"}
        if type_ is type(None):
            return {"type": "null"}
        origin, args = get_origin(type_), get_args(type_)
        if origin is Literal:
            return {"enum": list(args)} if len(args) > 1 else {"const": args[0]}
        if origin in (Union, types.UnionType):
            kinds = [a for a in args if a is not type(None)]
            if len(kinds) > 1:  # one of several kinds (null, where read, is the default)
                return {"anyOf": [self.of(kind) for kind in kinds]}
            return _nullable(self.of(kinds[0]))
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.of(args[0])}
        if origin in (list, frozenset, set):
            return {"type": "array", "items": self.of(args[0])}
        if origin in (dict, Mapping, typing.Mapping):
            if args == (str, str):
                return {"type": "object", "additionalProperties": _PARAMETER_VALUE}
            return {"type": "object", "additionalProperties": self.of(args[1])}
        raise TypeError(f"no JSON schema for {type_!r}")

    def _component(self, cls: type) -> JsonSchema:
        name = self._titles.get(cls, cls.__name__)
        owner = self._owners.get(name)
        if owner is not None and owner is not cls:
            raise TypeError(f"two classes named {name} in one document")
        if owner is None:
            self._owners[name] = cls
            self.components[name] = {}  # taken before the fields, for recursive classes
            made = self._answer(cls) if cls in ANSWER_FIELDS else self._object(cls)
            self.components[name] = made
        return schema_ref(name)

    def _answer(self, cls: type) -> JsonSchema:
        hints = typing.get_type_hints(cls)
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        other_keys: JsonSchema | bool = False
        for row in ANSWER_FIELDS[cls]:
            type_ = hints[row.attribute]
            mapped = spread_mapping(type_) if row.spread else None
            if mapped is not None:  # the data's own keys, each holding a value of one type
                other_keys = self.of(mapped)
                continue
            if row.spread:  # its keys sit in this object: required only if always there
                kinds = [a for a in get_args(type_) if a is not type(None)] or [type_]
                inner = self._answer(kinds[0])
                properties.update(inner["properties"])
                if type(None) not in get_args(type_):
                    required.extend(inner["required"])
                continue
            if row.omitted_when_none:  # the key is left out rather than null
                type_ = next(a for a in get_args(type_) if a is not type(None))
            else:
                required.append(row.key)
            refined = dict(row.schema or {})
            # A reference replaces what the type says (JSON sent as a model class writes it).
            sent = {} if "$ref" in refined else self._sent(type_)
            properties[row.key] = {**sent, **refined}
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": other_keys,
        }

    def _sent(self, type_: Any) -> JsonSchema:
        """What a writer sends for ``type_``: as read, but a ``Mapping[str, str]`` holds
        strings only (a reader takes numbers and booleans too)."""
        origin, args = get_origin(type_), get_args(type_)
        if origin in (Union, types.UnionType):
            kinds = [a for a in args if a is not type(None)]
            if len(kinds) > 1:
                one_of: JsonSchema = {"anyOf": [self._sent(kind) for kind in kinds]}
                return _nullable(one_of) if len(kinds) < len(args) else one_of
            return _nullable(self._sent(kinds[0]))
        if origin in (dict, Mapping, typing.Mapping) and args == (str, str):
            return {"type": "object", "additionalProperties": {"type": "string"}}
        return self.of(type_)

    def _object(self, cls: type) -> JsonSchema:
        renames = self._names.get(cls, {})
        refined = self._refined.get(cls, {})
        hints = typing.get_type_hints(cls)
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            key = renames.get(field.name, field.name)
            schema = {**self.of(hints[field.name]), **refined.get(field.name, {})}
            if field.default is attrs.NOTHING:
                required.append(key)
            else:
                schema = _nullable(schema)  # null means the default
            properties[key] = schema
        out: JsonSchema = {"type": "object", "properties": properties}
        if required:
            out["required"] = required
        if cls in self._closed:
            out["additionalProperties"] = False
        return out


def _nullable(schema: JsonSchema) -> JsonSchema:
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}
