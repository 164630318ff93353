"""Unleash's delta events, made by diffing two snapshots of one environment.

The streaming hub keeps, per environment, the client JSON of every flag and segment at
the last store revision it saw (`EnvironmentState`). When the revision moves it renders
the new state once, diffs it flag by flag against the old one (`diff`), and keeps the
result as a `ChangeBatch` whose event id is the new store revision. A batch is then cut
to each client's scope (`scoped_events`): a flag that moves out of a token's projects is a
``feature-removed`` for that token, and a flag's segments travel with it, as Unleash's
``materializeReferencedSegments`` does, so a scoped client never misses a segment it needs.

Event ids are store revisions: every node over one database gives the same id to the
same state, so a client that reconnects to another node resumes where it was.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import attrs

from flagcore.model import ClientFeatures
from flagcore.wire import (
    DeltaEvent,
    FeatureRemoved,
    FeatureUpdated,
    Hydration,
    SegmentRemoved,
    SegmentUpdated,
    unstructure_flag,
    write_segment,
)

__all__ = [
    "ChangeBatch",
    "EnvironmentState",
    "EventHistory",
    "FlagEntry",
    "Scope",
    "diff",
    "scoped_events",
]


@attrs.frozen
class Scope:
    """The projects a client token sees (None: all of them)."""

    projects: frozenset[str] | None = None

    @classmethod
    def of(cls, projects: Iterable[str] | None) -> Scope:
        if projects is None:
            return cls(None)
        wanted = frozenset(projects)
        return cls(None if "*" in wanted else wanted)

    def sees(self, project: str | None) -> bool:
        if project is None:
            return False
        return self.projects is None or project in self.projects


@attrs.frozen
class FlagEntry:
    """One flag as SDKs see it (format 2 JSON), with what scoping needs to know of it."""

    project: str
    json: dict[str, Any] = attrs.field(eq=True)
    segment_ids: tuple[int, ...]


@attrs.frozen
class EnvironmentState:
    """Every active flag and used segment of one environment at one store revision."""

    revision: int
    flags: dict[str, FlagEntry]
    segments: dict[int, dict[str, Any]]
    exists: bool = True  # False: the environment does not exist (it has no flags)

    @classmethod
    def from_snapshot(cls, snapshot: ClientFeatures, revision: int) -> EnvironmentState:
        flags = {
            flag.name: FlagEntry(
                flag.project,
                unstructure_flag(flag),
                tuple(sorted({i for s in flag.strategies for i in s.segments})),
            )
            for flag in snapshot.features
        }
        segments = {segment.id: write_segment(segment) for segment in snapshot.segments}
        return cls(revision, flags, segments)

    def hydration(self, scope: Scope) -> Hydration:
        """Unleash's ``hydration`` event: the flags in scope and the segments they use."""
        features = tuple(entry.json for entry in self.flags.values() if scope.sees(entry.project))
        used = sorted(
            {i for e in self.flags.values() if scope.sees(e.project) for i in e.segment_ids}
        )
        segments = tuple(self.segments[i] for i in used if i in self.segments)
        return Hydration(self.revision, features, segments)


@attrs.frozen
class FeatureChange:
    name: str
    old_project: str | None  # None: the flag was not there before
    new: FlagEntry | None  # None: the flag is gone (archived, deleted)


@attrs.frozen
class SegmentChange:
    segment_id: int
    json: dict[str, Any] | None  # None: no flag of the environment uses it any more
    user_projects: frozenset[str]  # projects of the flags that use it now


@attrs.frozen
class ChangeBatch:
    """What changed in one environment between two revisions; ``event_id`` is the newer."""

    event_id: int
    features: tuple[FeatureChange, ...]
    segments: tuple[SegmentChange, ...]
    # Every segment a changed flag uses, as it is now: sent with the flag (see module doc).
    flag_segments: dict[int, dict[str, Any]]

    def __bool__(self) -> bool:
        return bool(self.features or self.segments)


def diff(old: EnvironmentState, new: EnvironmentState) -> ChangeBatch:
    features = []
    for name, entry in new.flags.items():
        before = old.flags.get(name)
        if before is None or before != entry:
            features.append(FeatureChange(name, before.project if before else None, entry))
    features.extend(
        FeatureChange(name, before.project, None)
        for name, before in old.flags.items()
        if name not in new.flags
    )
    users: dict[int, set[str]] = {}
    for entry in new.flags.values():
        for segment_id in entry.segment_ids:
            users.setdefault(segment_id, set()).add(entry.project)
    segments = [
        SegmentChange(i, json, frozenset(users.get(i, ())))
        for i, json in new.segments.items()
        if old.segments.get(i) != json
    ]
    segments.extend(
        SegmentChange(i, None, frozenset()) for i in old.segments if i not in new.segments
    )
    flag_segments = {
        i: new.segments[i]
        for change in features
        if change.new is not None
        for i in change.new.segment_ids
        if i in new.segments
    }
    return ChangeBatch(new.revision, tuple(features), tuple(segments), flag_segments)


def scoped_events(batches: Iterable[ChangeBatch], scope: Scope) -> list[DeltaEvent]:
    """The events of ``batches`` (oldest first) that a client of ``scope`` must see."""
    events: list[DeltaEvent] = []
    for batch in batches:
        sent_segments: set[int] = set()
        for segment in batch.segments:
            if segment.json is None:
                # Only an id, so every client may hear of it (as in Unleash).
                events.append(SegmentRemoved(batch.event_id, segment.segment_id))
            elif any(scope.sees(project) for project in segment.user_projects):
                sent_segments.add(segment.segment_id)
                events.append(SegmentUpdated(batch.event_id, segment.json))
        for change in batch.features:
            new = change.new
            if new is not None and scope.sees(new.project):
                for segment_id in new.segment_ids:
                    if segment_id not in sent_segments and segment_id in batch.flag_segments:
                        sent_segments.add(segment_id)
                        events.append(
                            SegmentUpdated(batch.event_id, batch.flag_segments[segment_id])
                        )
                events.append(FeatureUpdated(batch.event_id, new.json))
            elif change.old_project is not None and scope.sees(change.old_project):
                events.append(FeatureRemoved(batch.event_id, change.name, change.old_project))
    return events


class EventHistory:
    """The last ``capacity`` change batches of one environment, for catch-up.

    ``floor`` is the oldest revision a client may resume from: every change after it is
    kept. A client whose id is older than the floor, newer than the current state (from
    the future, or from a node that is ahead), or not a number gets a hydration instead.
    """

    def __init__(self, state: EnvironmentState, capacity: int) -> None:
        self.state = state
        self.floor = state.revision
        self._batches: deque[ChangeBatch] = deque()
        self._capacity = max(1, capacity)

    def advance(self, new: EnvironmentState) -> ChangeBatch | None:
        """Move to ``new``; the batch of what changed, or None if nothing in it did."""
        batch = diff(self.state, new)
        self.state = new
        if not batch:
            return None
        self._batches.append(batch)
        while len(self._batches) > self._capacity:
            self.floor = self._batches.popleft().event_id
        return batch

    def can_resume(self, last_event_id: int | None) -> bool:
        return last_event_id is not None and self.floor <= last_event_id <= self.state.revision

    def since(self, last_event_id: int, scope: Scope) -> list[DeltaEvent]:
        """The events after ``last_event_id`` in ``scope`` (check `can_resume` first), only
        the last one for each flag and segment: a client that missed ten edits of a flag
        needs its final form, once."""
        events = scoped_events((b for b in self._batches if b.event_id > last_event_id), scope)
        last: dict[tuple[str, Any], DeltaEvent] = {}
        for event in events:
            key = _subject(event)
            last.pop(key, None)  # moved to the end: it is applied after what it follows
            last[key] = event
        return list(last.values())


def _subject(event: DeltaEvent) -> tuple[str, Any]:
    if isinstance(event, FeatureUpdated):
        return ("feature", event.feature["name"])
    if isinstance(event, FeatureRemoved):
        return ("feature", event.feature_name)
    if isinstance(event, SegmentUpdated):
        return ("segment", event.segment["id"])
    if isinstance(event, SegmentRemoved):
        return ("segment", event.segment_id)
    return ("hydration", event.event_id)


def parse_event_id(raw: str | None) -> int | None:
    """A client's last event id (``Last-Event-ID`` or a delta ETag), or None if garbage."""
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip()
    if text.startswith('"') or text.endswith('"'):
        if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
            return None
        text = text[1:-1]
    if not text or len(text) > 19 or not text.isdigit() or not text.isascii():
        return None
    return int(text)
