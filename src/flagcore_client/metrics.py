"""Usage counts sent on Unleash's metrics path: yes/no per flag and variant names."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

__all__ = ["UsageCounts"]


class UsageCounts:
    """Counted from any thread; `take` hands over the bucket and starts a new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._toggles: dict[str, dict[str, Any]] = {}
        self._start = dt.datetime.now(dt.UTC)

    def count(self, name: str, enabled: bool, variant: str | None = None) -> None:
        with self._lock:
            toggle = self._toggles.get(name)
            if toggle is None:
                toggle = self._toggles[name] = {"yes": 0, "no": 0, "variants": {}}
            toggle["yes" if enabled else "no"] += 1
            if variant is not None:
                variants = toggle["variants"]
                variants[variant] = variants.get(variant, 0) + 1

    def take(self) -> dict[str, Any] | None:
        """The bucket since the last take (None if nothing was counted)."""
        now = dt.datetime.now(dt.UTC)
        with self._lock:
            toggles, self._toggles = self._toggles, {}
            start, self._start = self._start, now
        if not toggles:
            return None
        return {"start": start.isoformat(), "stop": now.isoformat(), "toggles": toggles}

    def give_back(self, bucket: dict[str, Any]) -> None:
        """Put an unsent bucket back, so a failed send loses no counts."""
        with self._lock:
            self._start = min(self._start, dt.datetime.fromisoformat(bucket["start"]))
            for name, counted in bucket["toggles"].items():
                toggle = self._toggles.setdefault(name, {"yes": 0, "no": 0, "variants": {}})
                toggle["yes"] += counted["yes"]
                toggle["no"] += counted["no"]
                for variant, n in counted["variants"].items():
                    toggle["variants"][variant] = toggle["variants"].get(variant, 0) + n
