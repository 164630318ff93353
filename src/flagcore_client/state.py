"""The flags a client holds, as Unleash's format 2 JSON: kept to back them up and to
know which flags a change touched.

Payloads and deltas are read by the same reader the engine uses
(`flagcore.wire.index_client_features`, `flagcore.wire.apply_delta_events`), so the two
cannot disagree on what a delta event means.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flagcore.wire import IndexedClientFeatures, apply_delta_events, index_client_features

__all__ = ["ClientState"]

# Delta events after which the names held before are needed to say what was touched.
_NEEDS_BEFORE = frozenset({"hydration", "feature-removed"})


class ClientState:
    def __init__(self) -> None:
        self._held = IndexedClientFeatures()

    @property
    def features(self) -> Mapping[str, Any]:
        """Each flag's JSON by name."""
        return self._held.features

    @property
    def segments(self) -> Mapping[int, Any]:
        return self._held.segments

    def replace(self, payload: Mapping[str, Any]) -> set[str]:
        """Take a full payload (``/api/client/features``); the names of the flags touched."""
        fresh = index_client_features(payload)
        touched = _differing(self._held, fresh)
        self._held = fresh
        return touched

    def apply(self, delta: Mapping[str, Any]) -> set[str]:
        """Apply delta events as `flagcore.Engine.apply_delta` does; the flags touched."""
        events = delta.get("events")
        before = IndexedClientFeatures()
        if isinstance(events, list) and any(
            isinstance(e, Mapping) and e.get("type") in _NEEDS_BEFORE for e in events
        ):
            before = IndexedClientFeatures(dict(self._held.features), dict(self._held.segments))
        touched: set[str] = set()

        def changed(kind: str, key: Any) -> None:
            if kind == "hydration":
                touched.update(_differing(before, self._held))
            elif kind == "feature" and (key in self._held.features or key in before.features):
                touched.add(key)
            elif kind == "segment":
                touched.update(self._users_of(key))

        apply_delta_events(self._held, delta, changed)
        return touched

    def _users_of(self, segment_id: object) -> set[str]:
        return {
            name
            for name, feature in self._held.features.items()
            if any(segment_id in (s.get("segments") or ()) for s in feature.get("strategies", ()))
        }

    def payload(self) -> dict[str, Any]:
        return {
            "version": 2,
            "features": list(self._held.features.values()),
            "segments": list(self._held.segments.values()),
        }

    def save(self, path: Path) -> None:
        """Write the backup whole or not at all (a temporary file, then a rename)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(self.payload(), separators=(",", ":"))
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _differing(old: IndexedClientFeatures, new: IndexedClientFeatures) -> set[str]:
    """The flags that differ between two states; every flag when the segments differ."""
    touched = {
        name
        for name in new.features.keys() | old.features.keys()
        if new.features.get(name) != old.features.get(name)
    }
    if new.segments != old.segments:
        touched |= new.features.keys()
    return touched
