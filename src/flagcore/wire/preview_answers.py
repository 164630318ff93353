"""The preview of a flag change ("who will this flip?") as typed answers with their rows.

`flagcore.preview` builds them by evaluating the old and the new rules on a sample of
contexts; ``POST /api/admin/projects/<p>/features/<f>/environments/<e>/preview`` and the
admin UI's strategy editor show them. flagcore's own: Unleash has no such answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "ChangeRequestPreviewAnswer",
    "ContextSampleAnswer",
    "FlagChangePreview",
    "PreviewAnswer",
    "PreviewFlips",
    "RolloutChange",
    "VariantMove",
]

_CONTEXTS = AnswerField(
    "examples", "examples", schema={"items": {"type": "object"}, "maxItems": 10}
)


@answer(AnswerField("count", "count"), _CONTEXTS)
@attrs.frozen
class PreviewFlips:
    """How many sampled contexts moved one way, with the first few of them."""

    count: int
    examples: tuple[Mapping[str, Any], ...]


@answer(
    AnswerField("from_variant", "from"),
    AnswerField("to_variant", "to"),
    AnswerField("count", "count"),
    _CONTEXTS,
)
@attrs.frozen
class VariantMove:
    """Contexts whose variant changes from one name to another (``disabled``: none, the
    flag off or without variants for them)."""

    from_variant: str
    to_variant: str
    count: int
    examples: tuple[Mapping[str, Any], ...]


@answer(
    AnswerField("strategy_id", "strategyId", omitted_when_none=True),
    AnswerField("strategy_name", "strategyName"),
    AnswerField("stickiness", "stickiness"),
    AnswerField("group_id", "groupId"),
    AnswerField("before", "before"),
    AnswerField("after", "after"),
    AnswerField("statement", "statement"),
)
@attrs.frozen
class RolloutChange:
    """A sticky rollout whose percentage alone changed: the same buckets of the same
    group, so exactly ``after - before`` percent of the contexts it sees move, one way."""

    strategy_id: str | None
    strategy_name: str
    stickiness: str
    group_id: str
    before: int
    after: int
    statement: str


@answer(
    AnswerField("flag", "flag"),
    AnswerField("environment", "environment"),
    AnswerField("contexts", "contexts"),
    AnswerField("off_to_on", "offToOn"),
    AnswerField("on_to_off", "onToOff"),
    AnswerField("stayed_on", "stayedOn"),
    AnswerField("stayed_off", "stayedOff"),
    AnswerField("variant_moves", "variantMoves"),
    AnswerField("rollout_only", "rolloutOnly"),
    AnswerField("rollout_changes", "rolloutChanges"),
    AnswerField("from_traffic", "fromTraffic"),
    AnswerField("uploaded", "uploaded"),
)
@attrs.frozen
class PreviewAnswer:
    """What a proposed change does to the sampled contexts of one environment: counts of
    each way a context can go, variant moves, and, for a change of rollout percentages
    only, the exact statement of it (``rolloutOnly``)."""

    flag: str
    environment: str
    contexts: int
    off_to_on: PreviewFlips
    on_to_off: PreviewFlips
    stayed_on: int
    stayed_off: int
    variant_moves: tuple[VariantMove, ...]
    rollout_only: bool
    rollout_changes: tuple[RolloutChange, ...]
    # Where the contexts came from: sampled from the Frontend API and OFREP, or uploaded.
    from_traffic: int = 0
    uploaded: int = 0


@answer(
    AnswerField("environment", "environment"),
    AnswerField("stored", "stored"),
    AnswerField("dropped_fields", "droppedFields"),
)
@attrs.frozen
class ContextSampleAnswer:
    """An uploaded sample as kept: how many contexts, and which field names the deny-list
    kept out of it (never stored)."""

    environment: str
    stored: int
    dropped_fields: tuple[str, ...]


@answer(
    AnswerField("flag", "flag"),
    AnswerField("preview", "preview"),
    AnswerField("notes", "notes"),
)
@attrs.frozen
class FlagChangePreview:
    """One flag of a change request: the preview of all its changes together in the
    request's environment (null when none of them is about enabled, strategies or
    variants, or they cannot be applied as they stand), and ``notes`` on what is not
    counted (an archive, a dependency) or why nothing is."""

    flag: str
    preview: PreviewAnswer | None
    notes: tuple[str, ...]


@answer(
    AnswerField("id", "id"),
    AnswerField("environment", "environment"),
    AnswerField("state", "state"),
    AnswerField("features", "features"),
    AnswerField("segment_changes", "segmentChanges"),
)
@attrs.frozen
class ChangeRequestPreviewAnswer:
    """What a change request would do, flag by flag, to the sampled contexts of its
    environment; ``segmentChanges`` states the segment changes, which reach every flag
    using the segment and are not counted. flagcore's own: Unleash has no such answer."""

    id: int
    environment: str
    state: str
    features: tuple[FlagChangePreview, ...]
    segment_changes: tuple[str, ...]
