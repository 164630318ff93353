"""The flags a client holds, as Unleash's format 2 JSON: kept to back them up and to
know which flags a change touched."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ClientState"]


class ClientState:
    def __init__(self) -> None:
        self.features: dict[str, dict[str, Any]] = {}
        self.segments: dict[int, dict[str, Any]] = {}

    def replace(self, payload: Mapping[str, Any]) -> set[str]:
        """Take a full payload (``/api/client/features``); the names of the flags touched."""
        features = {f["name"]: f for f in payload.get("features", []) if isinstance(f, dict)}
        segments = {s["id"]: s for s in payload.get("segments", []) or [] if isinstance(s, dict)}
        touched = {
            n
            for n in features.keys() | self.features.keys()
            if features.get(n) != self.features.get(n)
        }
        if segments != self.segments:
            touched |= features.keys()
        self.features, self.segments = features, segments
        return touched

    def apply(self, delta: Mapping[str, Any]) -> set[str]:
        """Apply delta events as `flagcore.Engine.apply_delta` does; the flags touched."""
        touched: set[str] = set()
        for event in delta.get("events", []):
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            if kind == "hydration":
                touched |= self.replace(event)
            elif kind == "feature-updated" and isinstance(event.get("feature"), dict):
                feature = event["feature"]
                self.features[feature["name"]] = feature
                touched.add(feature["name"])
            elif kind == "feature-removed" and isinstance(event.get("featureName"), str):
                if self.features.pop(event["featureName"], None) is not None:
                    touched.add(event["featureName"])
            elif kind == "segment-updated" and isinstance(event.get("segment"), dict):
                segment = event["segment"]
                self.segments[segment["id"]] = segment
                touched |= self._users_of(segment["id"])
            elif kind == "segment-removed":
                self.segments.pop(event.get("segmentId"), None)  # type: ignore[arg-type]
                touched |= self._users_of(event.get("segmentId"))
        return touched

    def _users_of(self, segment_id: object) -> set[str]:
        return {
            name
            for name, feature in self.features.items()
            if any(segment_id in (s.get("segments") or ()) for s in feature.get("strategies", ()))
        }

    def payload(self) -> dict[str, Any]:
        return {
            "version": 2,
            "features": list(self.features.values()),
            "segments": list(self.segments.values()),
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
