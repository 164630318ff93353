"""Unleash's delta events (``/api/client/delta`` and the SSE stream) as typed values.

Each event is an answer class (`flagcore.wire.answer_table`): its writer and its schema
come from its rows, and `flagcore.wire.apply_delta_events` is the one reader of what they
write (the engine and the Python client both use it). Flags and segments travel as the
client JSON they were written to once (`flagcore.wire.unstructure_flag`,
`write_segment`), so a change fanned out to many streams is not written again for each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.schema import schema_ref

__all__ = [
    "DeltaAnswer",
    "DeltaEvent",
    "FeatureRemoved",
    "FeatureUpdated",
    "Hydration",
    "SegmentRemoved",
    "SegmentUpdated",
]

_FLAG = schema_ref("Flag")
_SEGMENT = schema_ref("Segment")


def _type(name: str) -> AnswerField:
    return AnswerField("type", "type", schema={"const": name})


_EVENT_ID = AnswerField("event_id", "eventId")


@answer(
    _type("hydration"),
    _EVENT_ID,
    AnswerField("features", "features", schema={"items": _FLAG}),
    AnswerField("segments", "segments", schema={"items": _SEGMENT}),
)
@attrs.frozen
class Hydration:
    """Everything in scope: the flags and the segments they use."""

    type: str = attrs.field(default="hydration", init=False)
    event_id: int
    features: tuple[Mapping[str, Any], ...]
    segments: tuple[Mapping[str, Any], ...]


@answer(_type("feature-updated"), _EVENT_ID, AnswerField("feature", "feature", schema=_FLAG))
@attrs.frozen
class FeatureUpdated:
    type: str = attrs.field(default="feature-updated", init=False)
    event_id: int
    feature: Mapping[str, Any]


@answer(
    _type("feature-removed"),
    _EVENT_ID,
    AnswerField("feature_name", "featureName"),
    AnswerField("project", "project"),
)
@attrs.frozen
class FeatureRemoved:
    """A flag gone, or moved out of the client's projects."""

    type: str = attrs.field(default="feature-removed", init=False)
    event_id: int
    feature_name: str
    project: str


@answer(_type("segment-updated"), _EVENT_ID, AnswerField("segment", "segment", schema=_SEGMENT))
@attrs.frozen
class SegmentUpdated:
    type: str = attrs.field(default="segment-updated", init=False)
    event_id: int
    segment: Mapping[str, Any]


@answer(_type("segment-removed"), _EVENT_ID, AnswerField("segment_id", "segmentId"))
@attrs.frozen
class SegmentRemoved:
    """Only an id, so every client may hear of it (as in Unleash)."""

    type: str = attrs.field(default="segment-removed", init=False)
    event_id: int
    segment_id: int


DeltaEvent = Hydration | FeatureUpdated | FeatureRemoved | SegmentUpdated | SegmentRemoved


@answer(AnswerField("events", "events"))
@attrs.frozen
class DeltaAnswer:
    """``{"events": [...]}``, oldest first."""

    events: tuple[DeltaEvent, ...]
