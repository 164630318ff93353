"""The evaluation context: who is asking, from where, and when.

A `Context` is built once per request and evaluated against many flags, so it is a
slotted value with no validation on the way in: evaluation tolerates whatever it holds
(non-string values are read through `context_value`, unknown types count as missing).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Context", "context_value"]

_CAMEL_FIELDS = {
    "userId": "user_id",
    "sessionId": "session_id",
    "remoteAddress": "remote_address",
    "environment": "environment",
    "appName": "app_name",
    "currentTime": "current_time",
}


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
        """Build from Unleash's camelCase context (as SDKs and the spec send it)."""
        get = data.get
        properties = get("properties")
        return cls(
            get("userId"),
            get("sessionId"),
            get("remoteAddress"),
            get("environment"),
            get("appName"),
            get("currentTime"),
            properties if isinstance(properties, Mapping) else {},
        )

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


def context_value(value: object) -> str | None:
    """Read a context value: strings as they are, numbers and booleans as their JSON text."""
    if type(value) is str:
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return None
