"""The one boundary between the model and Unleash's JSON (client-features payload and deltas).

Unleash's camelCase names live here and nowhere else. Reading is per flag: one malformed
flag is reported (with a JSON path) and left out, the rest of the payload still loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from flagcore import fast_reading, fast_writing
from flagcore.context import context_value
from flagcore.entities import ActionKind
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.gc_pause import gc_paused
from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)

__all__ = [
    "ClientFeaturesReading",
    "IndexedClientFeatures",
    "apply_delta_events",
    "converter",
    "error_details",
    "index_client_features",
    "read_client_features",
    "register_wire_type",
    "structure",
    "structure_constraints",
    "structure_dependencies",
    "structure_flag",
    "structure_segment",
    "structure_variants",
    "unstructure_client_features",
    "unstructure_flag",
]

_T = TypeVar("_T")

converter = cattrs.Converter(forbid_extra_keys=False, omit_if_default=False)


def _strict_str(value: Any, _type: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {type(value).__name__}")


def _strict_bool(value: Any, _type: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError(f"expected a boolean, got {type(value).__name__}")


def _strict_int(value: Any, _type: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TypeError(f"expected an integer, got {type(value).__name__}")


def _parameters(value: Any, _type: Any) -> Mapping[str, str]:
    """Parameters are strings in Unleash; older servers send numbers and booleans too."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, raw in value.items():
        text = context_value(raw)
        if text is not None:
            out[str(key)] = text
    return out


converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook_func(lambda t: t == Mapping[str, str], _parameters)

_RENAMES: dict[type, dict[str, str]] = {
    Constraint: {"context_name": "contextName", "case_insensitive": "caseInsensitive"},
    Override: {"context_name": "contextName"},
    Variant: {"weight_type": "weightType"},
    Strategy: {"sort_order": "sortOrder"},
    Flag: {"impression_data": "impressionData"},
}
# Wire keys where Unleash may send null to mean "the default" (an empty list, mostly).
_NULL_MEANS_DEFAULT: dict[type, tuple[str, ...]] = {
    Constraint: ("values",),
    Segment: ("constraints",),
    Override: ("values",),
    Variant: ("overrides", "stickiness", "weightType"),
    Strategy: ("constraints", "segments", "variants", "parameters"),
    Flag: ("strategies", "variants", "dependencies", "type", "project", "stale", "impressionData"),
    Dependency: ("enabled", "variants"),
}


def register_wire_type(cls: type, renames: Mapping[str, str] | None = None) -> None:
    """Teach the converter an attrs class whose wire names differ (``renames``: attr → key)."""
    if renames:
        _RENAMES[cls] = dict(renames)
    _register(cls)


def structure(data: Any, cls: type[_T], what: str = "the body") -> _T:
    """Read ``data`` as ``cls``; raises `InvalidInput` whose details name JSON paths."""
    return _structure(data, cls, what)


def _register(cls: type) -> None:
    renames = {name: override(rename=wire) for name, wire in _RENAMES.get(cls, {}).items()}
    structure: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls,
        converter,
        **renames,  # type: ignore[arg-type]
    )
    nullable = _NULL_MEANS_DEFAULT.get(cls, ())

    def structure_tolerating_nulls(data: Any, type_: Any) -> Any:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        if any(data.get(name) is None and name in data for name in nullable):
            data = {
                key: value for key, value in data.items() if not (value is None and key in nullable)
            }
        return structure(data, type_)

    converter.register_structure_hook(cls, structure_tolerating_nulls)
    converter.register_unstructure_hook(
        cls,
        make_dict_unstructure_fn(cls, converter, **renames),  # type: ignore[arg-type]
    )


converter.register_structure_hook(WeightType, lambda value, _t: WeightType(value))
converter.register_structure_hook(ActionKind, lambda value, _t: ActionKind(value))
converter.register_unstructure_hook(ActionKind, lambda value: value.value)
converter.register_unstructure_hook(WeightType, lambda value: value.value)
for _cls in (Constraint, Segment, Payload, Override, Variant, Strategy, Dependency, Flag):
    _register(_cls)


def error_details(exc: BaseException, root: str = "$") -> list[ErrorDetail]:
    """Flatten a cattrs failure into messages that name JSON paths."""
    if isinstance(exc, cattrs.BaseValidationError):
        return [
            ErrorDetail(message=message.split(" @ ")[0], path=_json_path(message, root))
            for message in cattrs.transform_error(exc, path=root)
        ]
    return [ErrorDetail(message=str(exc), path=root)]


def _json_path(message: str, root: str) -> str:
    _, _, where = message.partition(" @ ")
    return where.replace("$.", root + ".", 1) if where else root


def structure_flag(data: Any) -> Flag:
    """Read one client-features flag; raises `InvalidInput` with JSON paths."""
    try:
        return fast_reading.read_flag(data)
    except (fast_reading.NotFast, KeyError):
        return _structure(data, Flag, "a flag")


def structure_segment(data: Any) -> Segment:
    try:
        return fast_reading.read_segment(data)
    except (fast_reading.NotFast, KeyError):
        return _structure(data, Segment, "a segment")


def structure_constraints(data: Any) -> tuple[Constraint, ...]:
    try:
        return fast_reading.read_constraints(data)
    except (fast_reading.NotFast, KeyError):
        return _structure(data, tuple[Constraint, ...], "constraints")


def structure_variants(data: Any) -> tuple[Variant, ...]:
    try:
        return fast_reading.read_variants(data)
    except (fast_reading.NotFast, KeyError):
        return _structure(data, tuple[Variant, ...], "variants")


def structure_dependencies(data: Any) -> tuple[Dependency, ...]:
    try:
        return fast_reading.read_dependencies(data)
    except (fast_reading.NotFast, KeyError):
        return _structure(data, tuple[Dependency, ...], "dependencies")


def _structure(data: Any, cls: type[_T], what: str) -> _T:
    try:
        return converter.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        raise InvalidInput(f"{what} could not be read", error_details(exc)) from exc


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
            flags.append(raw if isinstance(raw, Flag) else structure_flag(raw))
        except InvalidInput as exc:
            problems.append((name, exc))
    segments = []
    for segment_id, raw in indexed.segments.items():
        try:
            segments.append(raw if isinstance(raw, Segment) else structure_segment(raw))
        except InvalidInput as exc:
            problems.append((f"segment {segment_id}", exc))
    return ClientFeaturesReading(ClientFeatures(tuple(flags), tuple(segments)), tuple(problems))


def unstructure_flag(flag: Flag, segments: Mapping[int, Segment] | None = None) -> dict[str, Any]:
    """A flag as Unleash serves it; with ``segments`` their constraints are inlined (format 1)."""
    data = fast_writing.write_flag(flag)
    for strategy in data["strategies"]:
        if segments is not None:
            inlined = [
                fast_writing.write_constraint(constraint)
                for segment_id in strategy.pop("segments")
                if segment_id in segments
                for constraint in segments[segment_id].constraints
            ]
            strategy["constraints"] = inlined + strategy["constraints"]
        # The client view of a strategy: admin-only fields stay out, as in Unleash.
        for key in ("id", "title", "sortOrder", "disabled"):
            del strategy[key]
    # SDKs older than Unleash 4 read a single strategy from these two legacy fields.
    first = data["strategies"][0] if data["strategies"] else {"name": "default", "parameters": {}}
    data["strategy"] = first["name"]
    data["parameters"] = first["parameters"]
    return data


def unstructure_client_features(snapshot: ClientFeatures, *, version: int = 2) -> dict[str, Any]:
    """Format 2 keeps segment ids on strategies and lists segments; format 1 inlines them."""
    with gc_paused():  # hundreds of thousands of dicts and lists, none of them garbage yet
        if version >= 2:
            return {
                "version": version,
                "features": [unstructure_flag(flag) for flag in snapshot.features],
                "segments": [fast_writing.write_segment(s) for s in snapshot.segments],
            }
        by_id = {segment.id: segment for segment in snapshot.segments}
        features = [unstructure_flag(flag, by_id) for flag in snapshot.features]
        return {"version": 1, "features": features}
