"""Client-features payloads in Unleash's JSON: reading them flag by flag, deltas, formats 1 and 2.

Reading is per flag: one malformed flag is reported (with a JSON path) and left out, the
rest of the payload still loads. Each item goes through the fast reader first and, if it
is not plainly well-typed, through the converter, which explains what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.gc_pause import gc_paused
from flagcore.model import ClientFeatures, Constraint, Dependency, Flag, Segment, Variant
from flagcore.wire import reading, writing
from flagcore.wire.converter import structure
from flagcore.wire.fields import (
    CASE_INSENSITIVE,
    CLIENT_HIDDEN_STRATEGY_KEYS,
    CONSTRAINTS,
    CONTEXT_NAME,
    DEPENDENCIES,
    DESCRIPTION,
    ENABLED,
    IMPRESSION_DATA,
    INVERTED,
    NAME,
    OPERATOR,
    OVERRIDES,
    PARAMETERS,
    PAYLOAD,
    PROJECT,
    SEGMENTS,
    STALE,
    STICKINESS,
    STRATEGIES,
    STRATEGY,
    TYPE,
    VALUE,
    VALUES,
    VARIANTS,
    WEIGHT,
    WEIGHT_TYPE,
)

__all__ = [
    "ClientFeaturesReading",
    "IndexedClientFeatures",
    "apply_delta_events",
    "index_client_features",
    "read_client_features",
    "structure_constraints",
    "structure_dependencies",
    "structure_flag",
    "structure_segment",
    "structure_variants",
    "unstructure_client_features",
    "unstructure_flag",
]


def structure_flag(data: Any) -> Flag:
    """Read one client-features flag; raises `InvalidInput` with JSON paths."""
    try:
        return reading.read_flag(data)
    except (reading.NotFast, KeyError):
        return structure(data, Flag, "a flag")


def structure_segment(data: Any) -> Segment:
    try:
        return reading.read_segment(data)
    except (reading.NotFast, KeyError):
        return structure(data, Segment, "a segment")


def structure_constraints(data: Any) -> tuple[Constraint, ...]:
    try:
        return reading.read_constraints(data)
    except (reading.NotFast, KeyError):
        return structure(data, tuple[Constraint, ...], "constraints")


def structure_variants(data: Any) -> tuple[Variant, ...]:
    try:
        return reading.read_variants(data)
    except (reading.NotFast, KeyError):
        return structure(data, tuple[Variant, ...], "variants")


def structure_dependencies(data: Any) -> tuple[Dependency, ...]:
    try:
        return reading.read_dependencies(data)
    except (reading.NotFast, KeyError):
        return structure(data, tuple[Dependency, ...], "dependencies")


@attrs.define
class IndexedClientFeatures:
    """A payload indexed but not yet read: flags by name, segments by id, as sent.

    Entries stay raw JSON (or model values) until someone needs them, so loading a
    large payload costs a pass over its names; `read_client_features` reads them all.
    """

    features: dict[str, Any] = attrs.field(factory=dict)
    segments: dict[Any, Any] = attrs.field(factory=dict)
    # Entries that cannot even be indexed (no name, no id), with why.
    unnamed: list[tuple[str, InvalidInput]] = attrs.field(factory=list)


def index_client_features(payload: Mapping[str, Any]) -> IndexedClientFeatures:
    """Index ``{"version", "features", "segments"}``, or a delta (``{"events": [...]}``)."""
    if not isinstance(payload, Mapping):
        raise InvalidInput("the client features payload must be a JSON object")
    indexed = IndexedClientFeatures()
    if "events" in payload and "features" not in payload:
        apply_delta_events(indexed, payload)
        return indexed
    _index_into(indexed, payload.get("features"), payload.get("segments"))
    return indexed


def _index_into(indexed: IndexedClientFeatures, features: Any, segments: Any) -> None:
    features = features or ()
    segments = segments or ()
    if not isinstance(features, Sequence) or not isinstance(segments, Sequence):
        raise InvalidInput("features and segments must be lists")
    for position, feature in enumerate(features):
        if _index_feature(indexed, feature) is None:
            _unreadable(indexed, f"features[{position}]", _NO_NAME)
    for position, segment in enumerate(segments):
        if _index_segment(indexed, segment) is None:
            _unreadable(indexed, f"segments[{position}]", _NO_ID)


def _index_feature(indexed: IndexedClientFeatures, feature: Any) -> str | None:
    """Index ``feature`` under its name and return the name; None if it has none."""
    name = feature.get("name") if isinstance(feature, Mapping) else None
    if not isinstance(name, str):
        return None
    indexed.features[name] = feature  # a later duplicate wins, as in Unleash
    return name


def _index_segment(indexed: IndexedClientFeatures, segment: Any) -> int | None:
    """Index ``segment`` under its id and return the id; None if it has no integer id."""
    segment_id = segment.get("id") if isinstance(segment, Mapping) else None
    if not isinstance(segment_id, int) or isinstance(segment_id, bool):
        return None
    indexed.segments[segment_id] = segment
    return segment_id


_NO_NAME = ("a flag needs a name", ErrorDetail("missing or not a string", "$.name"))
_NO_ID = ("a segment needs an integer id", ErrorDetail("not an integer", "$.id"))


def _unreadable(indexed: IndexedClientFeatures, where: str, why: tuple[str, ErrorDetail]) -> None:
    message, detail = why
    indexed.unnamed.append((where, InvalidInput(message, [detail])))


def apply_delta_events(
    indexed: IndexedClientFeatures,
    delta: Mapping[str, Any],
    changed: Callable[[str, Any], None] | None = None,
) -> None:
    """Apply Unleash's delta events in order: hydration, feature-/segment- updated and removed.

    ``changed(kind, key)`` hears of each change once it is indexed: ``("hydration", None)``,
    ``("feature", name)`` or ``("segment", id)``.
    """
    events = delta.get("events") if isinstance(delta, Mapping) else None
    if not isinstance(events, Sequence):
        raise InvalidInput("a delta payload must carry a list of events")
    for event in events:
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type")
        key: Any = None
        if kind == "hydration":
            fresh = IndexedClientFeatures()
            # Read first: a hydration that cannot be read leaves the old state in place.
            _index_into(fresh, event.get("features"), event.get("segments"))
            indexed.features.clear()
            indexed.features.update(fresh.features)
            indexed.segments.clear()
            indexed.segments.update(fresh.segments)
            indexed.unnamed[:] = fresh.unnamed
            change = "hydration"
        elif kind == "feature-updated":
            key = _index_feature(indexed, event.get("feature"))
            if key is None:
                _unreadable(indexed, "feature-updated", _NO_NAME)
                continue  # nothing was indexed
            change = "feature"
        elif kind == "feature-removed":
            key = event.get("featureName")
            if not isinstance(key, str):
                continue  # names no flag
            indexed.features.pop(key, None)
            change = "feature"
        elif kind == "segment-updated":
            key = _index_segment(indexed, event.get("segment"))
            if key is None:
                _unreadable(indexed, "segment-updated", _NO_ID)
                continue  # nothing was indexed
            change = "segment"
        elif kind == "segment-removed":
            key = event.get("segmentId")
            if not isinstance(key, int) or isinstance(key, bool):
                continue  # names no segment
            indexed.segments.pop(key, None)
            change = "segment"
        else:
            continue
        if changed is not None:
            changed(change, key)


@attrs.frozen
class ClientFeaturesReading:
    """A payload as read: the snapshot, plus what had to be left out and why."""

    snapshot: ClientFeatures
    problems: tuple[tuple[str, InvalidInput], ...] = ()


def read_client_features(payload: Mapping[str, Any]) -> ClientFeaturesReading:
    """Read a whole payload (or delta); one bad flag is left out and reported, not fatal."""
    indexed = index_client_features(payload)
    problems = list(indexed.unnamed)
    flags = []
    for name, raw in indexed.features.items():
        try:
            flags.append(structure_flag(raw))
        except InvalidInput as exc:
            problems.append((name, exc))
    segments = []
    for segment_id, raw in indexed.segments.items():
        try:
            segments.append(structure_segment(raw))
        except InvalidInput as exc:
            problems.append((f"segment {segment_id}", exc))
    return ClientFeaturesReading(ClientFeatures(tuple(flags), tuple(segments)), tuple(problems))


# How Unleash 8.2 serves a flag to SDKs: its keys in this order, and nothing for what
# holds nothing (no empty `dependencies` or `overrides`, no `value: null`, no false
# `inverted` or `caseInsensitive`, no `payload: null`); `description` stays, as null.
_FLAG_KEYS = (
    NAME,
    TYPE,
    ENABLED,
    PROJECT,
    STALE,
    STRATEGIES,
    VARIANTS,
    DESCRIPTION,
    IMPRESSION_DATA,
    DEPENDENCIES,
)
_STRATEGY_KEYS = (NAME, CONSTRAINTS, PARAMETERS, VARIANTS, SEGMENTS)
_CONSTRAINT_KEYS = (VALUE, VALUES, OPERATOR, CONTEXT_NAME, CASE_INSENSITIVE, INVERTED)
_VARIANT_KEYS = (NAME, WEIGHT, PAYLOAD, STICKINESS, WEIGHT_TYPE, OVERRIDES)
_LEFT_OUT_WHEN = {VALUE: None, PAYLOAD: None, INVERTED: False, CASE_INSENSITIVE: False}
_LEFT_OUT_WHEN_EMPTY = frozenset({OVERRIDES, DEPENDENCIES})


def _in_unleash_order(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for key in keys:
        if key not in data:
            continue
        value = data[key]
        if key in _LEFT_OUT_WHEN and value is _LEFT_OUT_WHEN[key]:
            continue
        if key in _LEFT_OUT_WHEN_EMPTY and not value:
            continue
        out[key] = value
    for key, value in data.items():  # anything else the writer knows, after Unleash's keys
        if key not in out and key not in keys:
            out[key] = value
    return out


def _variants(variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_in_unleash_order(variant, _VARIANT_KEYS) for variant in variants]


def unstructure_flag(flag: Flag, segments: Mapping[int, Segment] | None = None) -> dict[str, Any]:
    """A flag as Unleash serves it: format 2 without ``segments``, format 1 with them.

    Format 1 is for SDKs without segment support: each strategy's segment constraints are
    inlined after its own, in segment order, and the flag carries the legacy keys
    (`_legacy_fields`)."""
    data = writing.write_flag(flag)
    strategies = []
    for strategy in data[STRATEGIES]:
        if segments is not None:
            inlined = [
                writing.write_constraint(constraint)
                for segment_id in strategy.pop(SEGMENTS)
                if segment_id in segments
                for constraint in segments[segment_id].constraints
            ]
            strategy[CONSTRAINTS] = strategy[CONSTRAINTS] + inlined
        # The client view of a strategy: admin-only fields stay out, as in Unleash.
        for key in CLIENT_HIDDEN_STRATEGY_KEYS:
            del strategy[key]
        strategy[CONSTRAINTS] = [
            _in_unleash_order(constraint, _CONSTRAINT_KEYS) for constraint in strategy[CONSTRAINTS]
        ]
        strategy[VARIANTS] = _variants(strategy[VARIANTS])
        strategies.append(_in_unleash_order(strategy, _STRATEGY_KEYS))
    data[STRATEGIES] = strategies
    data[VARIANTS] = _variants(data[VARIANTS])
    served = _in_unleash_order(data, _FLAG_KEYS)
    if segments is not None:
        served.update(_legacy_fields(strategies))
    return served


# What format 1 says for a flag without strategies: Unleash's first servers had no such
# flag (each had one strategy, "default" unless chosen), and an enabled flag without
# strategies is on for everyone (client specification 01, "Feature.C"), as "default" is.
_NO_STRATEGY = "default"


def _legacy_fields(strategies: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Format 1's ``strategy`` and ``parameters``: the first strategy's name and a copy of
    its parameters (what SDKs from before multiple strategies evaluate); ``"default"`` and
    ``{}`` for a flag without strategies."""
    if not strategies:
        return {STRATEGY: _NO_STRATEGY, PARAMETERS: {}}
    first = strategies[0]
    return {STRATEGY: first[NAME], PARAMETERS: dict(first[PARAMETERS])}


def unstructure_client_features(
    snapshot: ClientFeatures, *, version: int = 2, pause_gc: bool = True
) -> dict[str, Any]:
    """``{"version": 2, "features", "segments"}``: segment ids on strategies and the segments
    listed; ``{"version": 1, "features"}``: each flag in format 1 (`unstructure_flag`).

    ``pause_gc=False`` leaves the cyclic collector alone (see flagcore.gc_pause)."""
    # Hundreds of thousands of dicts and lists, none of them garbage yet.
    with gc_paused(enabled=pause_gc):
        if version >= 2:
            return {
                "version": 2,
                "features": [unstructure_flag(flag) for flag in snapshot.features],
                "segments": [writing.write_segment(s) for s in snapshot.segments],
            }
        by_id = {segment.id: segment for segment in snapshot.segments}
        features = [unstructure_flag(flag, by_id) for flag in snapshot.features]
        return {"version": 1, "features": features}
