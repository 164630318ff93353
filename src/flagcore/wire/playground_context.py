"""The context a playground request gives, as a typed value: Unleash's fields and custom
properties, all strings.

The playground and explain routes, the admin UI's playground page, ``flagcore explain
--context`` and an uploaded context sample read their context into `PlaygroundContext`
with the HTTP layer's converter, from the keys below (closed: a key it does not name is
refused, as custom fields go in ``properties``). The playground's rules (bounds, a
required ``appName``, a ``currentTime`` that is a time) are the service's
(`flagcore.service.playground.check_context`), which gives the engine `as_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "APP_NAME",
    "CONTEXT_FIELDS",
    "CURRENT_TIME",
    "PLAYGROUND_CONTEXT_NAMES",
    "PlaygroundContext",
]

# The keys the playground's rules name (Unleash's; the rest are in `_KEYS` below).
APP_NAME = "appName"
CURRENT_TIME = "currentTime"


@attrs.frozen
class PlaygroundContext:
    """Unleash's context fields (None: not given) and custom ``properties``."""

    app_name: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    remote_address: str | None = None
    environment: str | None = None
    current_time: str | None = None
    properties: dict[str, str] = attrs.field(factory=dict, hash=False)

    def fields(self) -> dict[str, str]:
        """The fields given, by their JSON keys, in Unleash's order."""
        return {
            key: value
            for attribute, key in _KEYS.items()
            if (value := getattr(self, attribute)) is not None
        }

    def as_json(self) -> dict[str, Any]:
        """The context as the engine reads it: the fields given, and ``properties`` when
        there are any."""
        out: dict[str, Any] = self.fields()
        if self.properties:
            out["properties"] = dict(self.properties)
        return out


# Each field's JSON key: Unleash's context field names, in its order.
_KEYS: Mapping[str, str] = {
    "app_name": APP_NAME,
    "user_id": "userId",
    "session_id": "sessionId",
    "remote_address": "remoteAddress",
    "environment": "environment",
    "current_time": CURRENT_TIME,
}
# The renamed attributes, for the converters and the schema (as `flagcore.wire.WIRE_NAMES`).
PLAYGROUND_CONTEXT_NAMES: Mapping[type, Mapping[str, str]] = {
    PlaygroundContext: {attribute: key for attribute, key in _KEYS.items() if attribute != key}
}
if tuple(_KEYS) != tuple(field.name for field in attrs.fields(PlaygroundContext))[:-1]:
    raise TypeError("the keys of PlaygroundContext do not match its attributes")
CONTEXT_FIELDS = tuple(_KEYS.values())
"""Unleash's context fields; anything else goes in ``properties``."""
