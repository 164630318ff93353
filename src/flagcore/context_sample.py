"""The contexts a preview is scored on: a bounded sample per environment (issue 30).

Two sources, kept apart: ``traffic``, a reservoir sample (Algorithm R) of the contexts
the Frontend API and OFREP were sent, and ``upload``, the JSON lines a team posted. The
rules here are pure: which field names are never kept (`without_denied`), the canonical
text a context is kept as (`context_text`), and the reservoir's choice of slot
(`Reservoir`), which costs one random draw per context once the sample is full and
serialises nothing it does not keep.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

__all__ = [
    "DEFAULT_DENIED_FIELDS",
    "MAX_CONTEXT_TEXT",
    "MAX_ENVIRONMENTS",
    "MAX_PENDING_BYTES",
    "TRAFFIC",
    "UPLOAD",
    "ContextSampler",
    "Reservoir",
    "context_text",
    "without_denied",
]

TRAFFIC: Final = "traffic"
UPLOAD: Final = "upload"
DEFAULT_DENIED_FIELDS: Final = ("email", "remoteAddress")
"""Never stored unless a server says otherwise: an email names a person outright, and
the caller's IP address is filled in by the server for every browser (it is personal
data the caller did not choose to send)."""
MAX_CONTEXT_TEXT: Final = 8 * 1024
"""A context kept as longer text is not kept at all (a real one is a few hundred bytes)."""


def without_denied(
    context: Mapping[str, Any], denied: Collection[str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``context`` without the fields named in ``denied`` (at the top level and among
    ``properties``), and the names that were dropped, in order met."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in context.items():
        if key in denied:
            dropped.append(key)
        elif key == "properties" and isinstance(value, Mapping):
            properties = {}
            for name, item in value.items():
                if name in denied:
                    dropped.append(name)
                else:
                    properties[name] = item
            if properties:
                kept[key] = properties
        else:
            kept[key] = value
    return kept, tuple(dropped)


def context_text(context: Mapping[str, Any]) -> str:
    """The one text of a context (sorted keys, compact): equal contexts, equal texts."""
    return json.dumps(context, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Reservoir:
    """Algorithm R over one environment's contexts, one window at a time.

    Each context seen in a window has the same chance, ``size / seen``, of holding a slot
    at the window's end; a slot taken is a pending write (`take` hands them over). The
    count starts again every ``window`` (and after a restart), so each window's traffic
    overwrites the slots in turn and the sample follows what callers send now; slots a
    quiet window does not reach keep older contexts until retention deletes them.
    """

    def __init__(
        self,
        size: int,
        *,
        window: dt.timedelta = dt.timedelta(days=1),
        draw: random.Random | None = None,
    ) -> None:
        self.size = size
        self.window = window
        self.seen = 0
        self._window_start: dt.datetime | None = None
        self._draw = draw or random.Random()
        self.pending: dict[int, tuple[str, dt.datetime]] = {}

    def slot_for(self, now: dt.datetime) -> int | None:
        """The slot the next context seen takes, or None when it is not kept."""
        if self._window_start is None or now - self._window_start >= self.window:
            self._window_start, self.seen = now, 0
        self.seen += 1
        if self.seen <= self.size:
            return self.seen - 1
        drawn = self._draw.randrange(self.seen)
        return drawn if drawn < self.size else None

    def keep(self, slot: int, text: str, now: dt.datetime) -> None:
        self.pending[slot] = (text, now)

    def take(self) -> dict[int, tuple[str, dt.datetime]]:
        """The slots taken since the last call, emptied."""
        taken, self.pending = self.pending, {}
        return taken


MAX_ENVIRONMENTS: Final = 64
"""Environments sampled at once: without authentication a caller names its environment,
and each one holds a reservoir."""
MAX_PENDING_BYTES: Final = 32 * 1024 * 1024
"""Context text waiting to be written, all environments together; past it, contexts
are not kept until the next write (they are still counted as seen)."""


class ContextSampler:
    """Per environment, a reservoir of the contexts seen, and the slots it took since
    the last write: what a server holds between writes, bounded (`MAX_ENVIRONMENTS`,
    `MAX_PENDING_BYTES`). Not thread-safe: one event loop offers and takes."""

    def __init__(
        self,
        *,
        enabled: bool,
        size: int,
        denied: Collection[str],
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.enabled = enabled
        self.size = size
        self.denied = frozenset(denied)
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._reservoirs: dict[str, Reservoir] = {}
        self.pending_bytes = 0
        self.skipped = 0  # kept by the reservoir but over the pending bound

    def offer(self, environment: str, context: Mapping[str, Any]) -> None:
        """Maybe keep ``context`` (deny-listed fields left out) in ``environment``'s sample."""
        if not self.enabled:
            return
        reservoir = self._reservoirs.get(environment)
        if reservoir is None:
            if len(self._reservoirs) >= MAX_ENVIRONMENTS:
                return
            reservoir = self._reservoirs[environment] = Reservoir(self.size)
        now = self._clock()
        slot = reservoir.slot_for(now)
        if slot is None:
            return
        text = context_text(without_denied(context, self.denied)[0])
        if len(text) > MAX_CONTEXT_TEXT or self.pending_bytes + len(text) > MAX_PENDING_BYTES:
            self.skipped += 1
            return
        replaced = reservoir.pending.get(slot)
        if replaced is not None:
            self.pending_bytes -= len(replaced[0])
        self.pending_bytes += len(text)
        reservoir.keep(slot, text, now)

    def take(self) -> dict[str, dict[int, tuple[str, dt.datetime]]]:
        """Every slot taken since the last call, per environment, emptied."""
        taken = {env: r.take() for env, r in self._reservoirs.items() if r.pending}
        self.pending_bytes = 0
        return taken
