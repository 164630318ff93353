"""What an event changed, for the event log: its before-state (``preData``) and after-state
(``data``) flattened to paths (``strategies[0].parameters.rollout``) and compared, so a
person reads only the values that moved. Pure: values are shown as compact JSON, and the
page escapes them like every other value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = ["MAX_CHANGES", "Change", "changes"]

# An event's data is bounded by the API's bodies; a page still draws at most this many
# changed paths per event (and says how many more there are).
MAX_CHANGES = 200
_MISSING = object()


@attrs.frozen
class Change:
    """One path whose value differs; ``before`` or ``after`` is None when it was added
    or removed."""

    path: str
    before: str | None
    after: str | None

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        return "removed" if self.after is None else "changed"


def changes(before: Any, after: Any) -> list[Change]:
    """Every path whose value differs between ``before`` and ``after`` (either may be
    None: an event that created or deleted something), in the order of the data."""
    old = dict(_flat(before, "")) if before is not None else {}
    new = dict(_flat(after, "")) if after is not None else {}
    found = []
    for path in [*new, *(p for p in old if p not in new)]:
        was, now = old.get(path, _MISSING), new.get(path, _MISSING)
        if was != now:
            found.append(Change(path or "(value)", _shown(was), _shown(now)))
    return found


def _flat(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Leaves by path; an empty object or list is a leaf of its own."""
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            yield from _flat(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, inner in enumerate(value):
            yield from _flat(inner, f"{path}[{index}]")
    else:
        yield path, value


def _shown(value: Any) -> str | None:
    if value is _MISSING:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
