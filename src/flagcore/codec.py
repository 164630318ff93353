"""The one boundary between the model and Unleash's JSON (client-features payload and deltas).

Unleash's camelCase names live here and nowhere else. Reading is per flag: one malformed
flag is reported (with a JSON path) and left out, the rest of the payload still loads.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from flagcore import fast_reading, fast_writing
from flagcore.context import context_value
from flagcore.entities import ActionKind, TokenType
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.fast_writing import write_segment
from flagcore.gc_pause import gc_paused
from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    FlagType,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ERROR_DETAILS",
    "ClientFeaturesReading",
    "IndexedClientFeatures",
    "OutOfRange",
    "WrongType",
    "apply_delta_events",
    "converter",
    "error_details",
    "index_client_features",
    "json_member",
    "json_type",
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
    "wire_name",
    "write_segment",
]

_T = TypeVar("_T")

converter = cattrs.Converter(forbid_extra_keys=False, omit_if_default=False)

# Integers must fit in a signed 64-bit integer: what SQLite, PostgreSQL's bigint and
# orjson store, and what every SDK's JSON reader can hold.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_ERROR_DETAILS = 50
_JSON_TYPES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    tuple: "an array",
    dict: "an object",
    type(None): "null",
}


def json_type(value: object) -> str:
    """What a value is, in JSON's words (``a string``, ``an array``, ...)."""
    named = _JSON_TYPES.get(type(value))
    if named is not None:
        return named
    if isinstance(value, Mapping):
        return "an object"
    return f"a Python {type(value).__name__}"


class WrongType(TypeError):
    """A value of the wrong JSON type; the message says what was expected and what came."""

    def __init__(self, expected: str, value: object) -> None:
        super().__init__(f"expected {expected}, got {json_type(value)}")


class OutOfRange(ValueError):
    """A number the right type but outside what can be stored."""


def _strict_str(value: Any, _type: Any) -> str:
    if type(value) is str:
        return value
    raise WrongType("a string", value)


def _strict_bool(value: Any, _type: Any) -> bool:
    if type(value) is bool:
        return value
    raise WrongType("a boolean", value)


def _strict_int(value: Any, _type: Any) -> int:
    # JSON has one number type: 3.0 is the integer 3 (as in JSON Schema), 3.5 is not.
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise WrongType("an integer", value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise OutOfRange("expected an integer between -2^63 and 2^63-1")
    return value


def _noted(exc: Exception, index: int | str, item_type: Any) -> Exception:
    exc.add_note(cattrs.IterableValidationNote(f"@ {index!r}", index, item_type))
    return exc


def _is_homogeneous_tuple(type_: Any) -> bool:
    args = get_args(type_)
    return get_origin(type_) is tuple and len(args) == 2 and args[1] is Ellipsis


def _homogeneous_tuple(type_: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    """A JSON array, item by item; a string or an object is not a list of its parts."""
    item_type = get_args(type_)[0]

    def structure_tuple(value: Any, _type: Any) -> tuple[Any, ...]:
        if type(value) is not list and type(value) is not tuple:
            raise WrongType("an array", value)
        structure_item = converter.get_structure_hook(item_type)
        items, problems = [], []
        for index, item in enumerate(value):
            try:
                items.append(structure_item(item, item_type))
            except Exception as exc:  # every problem is reported, with its index
                problems.append(_noted(exc, index, item_type))
        if problems:
            raise cattrs.IterableValidationError(f"While structuring {type_!r}", problems, type_)
        return tuple(items)

    return structure_tuple


def _enum(enum_type: type[enum.Enum]) -> Callable[[Any, Any], enum.Enum]:
    allowed = ", ".join(str(member.value) for member in enum_type)

    def structure_enum(value: Any, _type: Any) -> enum.Enum:
        if type(value) is str or isinstance(value, enum_type):
            try:
                return enum_type(value)
            except ValueError:
                pass
        shown = repr(value) if type(value) is str else json_type(value)
        raise ValueError(f"expected one of {allowed}, got {shown[:80]}")

    return structure_enum


def _parameters(value: Any, _type: Any) -> Mapping[str, str]:
    """Parameters are strings in Unleash; numbers and booleans are read as Unleash writes
    them (``25`` → ``"25"``), null as missing; an array or an object is refused."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WrongType("an object", value)
    out: dict[str, str] = {}
    problems: list[Exception] = []
    for key, raw in value.items():
        text = context_value(raw)
        if text is not None:
            out[str(key)] = text
        elif raw is not None:
            problems.append(_noted(WrongType("a string", raw), str(key), str))
    if problems:
        raise cattrs.IterableValidationError("While structuring parameters", problems, dict)
    return out


converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook(int, _strict_int)
# Hooks for classes win over hooks for subclasses, so each str enum is named here (or
# it would be read as any string).
for _enum_type in (WeightType, FlagType, ActionKind, TokenType):
    converter.register_structure_hook(_enum_type, _enum(_enum_type))
converter.register_structure_hook_func(lambda t: t == Mapping[str, str], _parameters)
converter.register_structure_hook_factory(_is_homogeneous_tuple, _homogeneous_tuple)

_RENAMES: dict[type, dict[str, str]] = {
    Constraint: {"context_name": "contextName", "case_insensitive": "caseInsensitive"},
    Override: {"context_name": "contextName"},
    Variant: {"weight_type": "weightType"},
    Strategy: {"sort_order": "sortOrder"},
    Flag: {"impression_data": "impressionData"},
}


def wire_name(cls: type, attribute: str) -> str:
    """The JSON key under which ``cls``'s ``attribute`` travels (``contextName``)."""
    return _RENAMES.get(cls, {}).get(attribute, attribute)


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
    # Unleash sends null for fields it leaves at their default (an empty list, mostly), so
    # null in a field that has a default means that default; in a required field it is
    # refused like any other wrong type.
    cls_renames = _RENAMES.get(cls, {})
    nullable = frozenset(
        cls_renames.get(field.name, field.name)
        for field in attrs.fields(cls)
        if field.default is not attrs.NOTHING
    )

    def structure_tolerating_nulls(data: Any, type_: Any) -> Any:
        if not isinstance(data, Mapping):
            raise WrongType("an object", data)
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


converter.register_unstructure_hook(ActionKind, lambda value: value.value)
converter.register_unstructure_hook(WeightType, lambda value: value.value)
for _cls in (Constraint, Segment, Payload, Override, Variant, Strategy, Dependency, Flag):
    _register(_cls)


def error_details(exc: BaseException, root: str = "$") -> list[ErrorDetail]:
    """Flatten a cattrs failure into messages whose paths name the JSON keys the client sent
    (``$.constraints[0].contextName``, not the attribute ``context_name``)."""
    details: list[ErrorDetail] = []
    _collect_details(exc, root, details)
    return details


def _collect_details(exc: BaseException, path: str, out: list[ErrorDetail]) -> None:
    if isinstance(exc, cattrs.ClassValidationError):
        renames = _RENAMES.get(exc.cl, {})
        with_notes, without = exc.group_exceptions()
        for sub, attribute in with_notes:
            _collect_details(
                sub, json_member(path, renames.get(attribute.name, attribute.name)), out
            )
        for sub in without:
            _collect_details(sub, path, out)
    elif isinstance(exc, cattrs.IterableValidationError):
        with_index, without = exc.group_exceptions()
        for sub, item in with_index:
            index = item.index
            where = f"{path}[{index}]" if isinstance(index, int) else json_member(path, index)
            _collect_details(sub, where, out)
        for sub in without:
            _collect_details(sub, path, out)
    else:
        out.append(ErrorDetail(_problem(exc), path))


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def json_member(path: str, key: str) -> str:
    """``path.key``, or ``path["odd key"]`` when the key is not a plain name."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key[:100])}]"


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, (WrongType, OutOfRange, ValueError)) and exc.args:
        return str(exc.args[0])
    return f"invalid value ({type(exc).__name__})"


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
        details = error_details(exc)
        if len(details) > MAX_ERROR_DETAILS:
            # A body of 100,000 wrong items must not answer with 100,000 messages.
            more = len(details) - MAX_ERROR_DETAILS
            details = [*details[:MAX_ERROR_DETAILS], ErrorDetail(f"and {more} more problems")]
        first = details[0]
        raise InvalidInput(
            f"{what} could not be read: {first.path}: {first.message}", details
        ) from exc


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
