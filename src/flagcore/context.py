"""The evaluation context: who is asking, from where, and when.

A `Context` is built once per request and evaluated against many flags, so it is a
slotted value with no validation on the way in: evaluation tolerates whatever it holds
(non-string values are read through `context_value`, unknown types count as missing).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

__all__ = ["Context", "MappingContext", "Readable", "context_value", "standard_field"]

_CAMEL_FIELDS = {
    "userId": "user_id",
    "sessionId": "session_id",
    "remoteAddress": "remote_address",
    "environment": "environment",
    "appName": "app_name",
    "currentTime": "current_time",
}
_CAMEL_NAMES = tuple(_CAMEL_FIELDS)
_NO_PROPERTIES: Mapping[str, Any] = {}


@attrs.frozen(slots=True)
class Context:
    """Unleash's context; ``properties`` carries every custom field."""

    user_id: Any = None
    session_id: Any = None
    remote_address: Any = None
    environment: Any = None
    app_name: Any = None
    current_time: Any = None
    properties: Mapping[str, Any] = attrs.field(factory=dict, hash=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Context:
        """Build from Unleash's camelCase context, resolving fields as Unleash's engine does.

        A standard field absent from the top level is taken from ``properties`` (a field
        present but null stays missing); other top-level string values act as properties.
        """
        properties = data.get("properties")
        if type(properties) is not dict and not isinstance(properties, Mapping):
            properties = _NO_PROPERTIES
        values: list[Any] = []
        present = 0
        for camel in _CAMEL_NAMES:
            if camel in data:
                values.append(data[camel])
                present += 1
            else:
                values.append(properties.get(camel) if properties else None)
        if len(data) - present - ("properties" in data) > 0:
            extra = {
                key: value
                for key, value in data.items()
                if type(value) is str and key not in _CAMEL_FIELDS and key != "properties"
            }
            if extra:
                properties = {**properties, **extra}
        user_id, session_id, remote_address, environment, app_name, current_time = values
        return cls(
            user_id, session_id, remote_address, environment, app_name, current_time, properties
        )

    def property_value(self, name: str) -> Any:
        """The custom field ``name`` (from ``properties``), or None."""
        properties: object = self.properties  # whatever the caller put there
        if type(properties) is dict or isinstance(properties, Mapping):
            return properties.get(name)
        return None

    def to_mapping(self) -> dict[str, Any]:
        """The camelCase form, leaving out fields that are not set."""
        out: dict[str, Any] = {
            camel: getattr(self, snake)
            for camel, snake in _CAMEL_FIELDS.items()
            if getattr(self, snake) is not None
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out


class MappingContext(Context):
    """A camelCase mapping seen as a `Context`, read lazily (an evaluation reads 1–3 fields).

    Building a full `Context` from a mapping costs more than evaluating a flag; this view
    costs one object, and each field is looked up (with Unleash's fallback rules, as in
    `Context.from_mapping`) only when a rule reads it.
    """

    __slots__ = ("_data", "_merged")
    _data: Mapping[str, Any]
    _merged: Mapping[str, Any] | None

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_merged", None)

    def _field(self, name: str) -> Any:
        return standard_field(self._data, name)

    user_id = property(lambda self: self._field("userId"))
    session_id = property(lambda self: self._field("sessionId"))
    remote_address = property(lambda self: self._field("remoteAddress"))
    environment = property(lambda self: self._field("environment"))
    app_name = property(lambda self: self._field("appName"))
    current_time = property(lambda self: self._field("currentTime"))

    def property_value(self, name: str) -> Any:
        # A top-level string under a non-standard name wins over properties, as in Unleash.
        data = self._data
        value = data.get(name)
        if type(value) is str and name not in _CAMEL_FIELDS and name != "properties":
            return value
        properties = data.get("properties")
        if type(properties) is dict or isinstance(properties, Mapping):
            return properties.get(name)
        return None

    @property
    def properties(self) -> Mapping[str, Any]:
        merged = self._merged
        if merged is None:
            merged = Context.from_mapping(self._data).properties
            object.__setattr__(self, "_merged", merged)
        return merged


def standard_field(data: Mapping[str, Any], camel: str) -> Any:
    """A standard field of a camelCase context: top level first, else ``properties``."""
    if camel in data:
        return data[camel]
    properties = data.get("properties")
    if type(properties) is dict or isinstance(properties, Mapping):
        return properties.get(camel)
    return None


Readable = Context | dict[str, Any]
"""What compiled rules read: a `Context`, or a plain dict in Unleash's camelCase, read
directly (the field readers in `flagcore.operators` know both; a wrapper per evaluation
cost as much as the evaluation itself)."""


def context_value(value: object) -> str | None:
    """A non-string context value as Unleash's engine reads it from JSON, or None if unusable.

    Booleans become ``true``/``false``; integers their digits; floats the shortest text
    that reads back the same, in decimal between 1e-5 and 1e16 and in exponent form
    (``1e+16``, ``1e-6``) outside. Lists, objects and null count as missing.
    """
    if type(value) is str:
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -(2**63) <= value < 2**64:
            return str(value)
        value = float(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return None


def _float_text(value: float) -> str | None:
    if value != value or value in (float("inf"), float("-inf")):
        return None
    magnitude = abs(value)
    if magnitude == 0 or 1e-5 <= magnitude < 1e16:
        text = format(Decimal(repr(value)), "f")
        return text if "." in text else text + ".0"
    mantissa, _, exponent = repr(value).partition("e")
    power = int(exponent)
    return f"{mantissa.removesuffix('.0')}e{'+' if power > 0 else ''}{power}"
