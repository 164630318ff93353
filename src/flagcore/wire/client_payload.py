"""The client-features payload as a typed answer: the envelope SDKs get around the flags.

``/api/client/features`` is the hot path, so the server keeps writing the payload by hand
(`unstructure_client_features`, then the echoed query and the meta added to that dict):
one dict, no value built per poll. `ClientFeaturesAnswer` is the same payload as a value
of the answer table, whose generated writer and closed schema follow from its rows; the
published contract is this schema, and `tests/core/test_client_payload.py` holds the fast
writer to the derived one on every client-specification state, in both formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.model import ClientFeatures, Segment
from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.client_features import unstructure_flag
from flagcore.wire.schema import schema_ref

__all__ = ["CLIENT_FLAG_SCHEMA", "ClientFeaturesAnswer", "PayloadMeta"]

# A flag as SDKs get it is the wire's `Flag` (strategies without the admin-only keys), and
# in format 1 (clients without Unleash-Client-Spec 4.2.0) the legacy keys: the first
# strategy's name ("default" without one) and its parameters.
CLIENT_FLAG_SCHEMA: Mapping[str, Any] = {
    "allOf": [schema_ref("Flag")],
    "properties": {
        "strategy": {"type": "string"},
        "parameters": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


@answer(
    AnswerField("revision_id", "revisionId"),
    AnswerField("etag", "etag"),
    AnswerField("query_hash", "queryHash"),
)
@attrs.frozen
class PayloadMeta:
    """What the payload says of itself: Unleash's ETag ``"<queryHash>:<revisionId>:v1"``."""

    revision_id: int
    etag: str
    query_hash: str


@answer(
    AnswerField("version", "version"),
    AnswerField("features", "features", schema={"items": CLIENT_FLAG_SCHEMA}),
    AnswerField("segments", "segments", omitted_when_none=True),
    AnswerField("query", "query", schema={"type": "object"}),
    AnswerField("meta", "meta"),
)
@attrs.frozen
class ClientFeaturesAnswer:
    """``{"version", "features", "segments"?, "query", "meta"}``: format 2 lists the
    segments and strategies name them by id; format 1 has no segments (their constraints
    inlined in each strategy). ``features`` are the flags as served (`unstructure_flag`),
    ``query`` the query echoed back (its keys depend on what was asked)."""

    version: int
    features: tuple[dict[str, Any], ...]
    segments: tuple[Segment, ...] | None
    query: dict[str, Any]
    meta: PayloadMeta

    @classmethod
    def of(
        cls, snapshot: ClientFeatures, version: int, query: dict[str, Any], meta: PayloadMeta
    ) -> ClientFeaturesAnswer:
        if version >= 2:
            flags = tuple(unstructure_flag(flag) for flag in snapshot.features)
            return cls(2, flags, snapshot.segments, query, meta)
        by_id = {segment.id: segment for segment in snapshot.segments}
        flags = tuple(unstructure_flag(flag, by_id) for flag in snapshot.features)
        return cls(1, flags, None, query, meta)
