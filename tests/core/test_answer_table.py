"""The answers' table is the one source of an answer's JSON: the writer follows it key by key
(Unleash's key order, keys left out when None where Unleash leaves them out), and the
schema the OpenAPI document publishes is derived from it, so the two cannot part."""

from __future__ import annotations

import datetime as dt
import json
import typing
from typing import Any

import attrs
import jsonschema
import pytest

from flagcore import wire
from flagcore.entities import (
    ApiToken,
    Environment,
    EnvironmentState,
    Event,
    FlagDefinition,
    FlagDetails,
    SegmentDefinition,
    Tag,
    TokenType,
)
from flagcore.errors import ErrorDetail
from flagcore.explain import VariantChoice
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant
from flagcore.variants import OverrideMatch, VariantResult, VariantTrace
from flagcore.wire import (
    ANSWER_FIELDS,
    AnswerField,
    DeltaAnswer,
    ErrorAnswer,
    FeatureRemoved,
    FeatureUpdated,
    FlagAnswer,
    FlagDetailsAnswer,
    Hydration,
    SchemaSet,
    SegmentAnswer,
    SegmentRemoved,
    TokenAnswer,
    answer,
    write_answer,
)
from flagcore.wire.answer_table import spread_mapping

_AT = dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
_CONSTRAINT = Constraint("country", "IN", ("NO",), None, False, True)
_FLAG = FlagDefinition(
    "f", "web", "release", None, True, False, _AT, None, (Dependency("parent", False, ("a",)),)
)
_STRATEGY = Strategy("flexibleRollout", {"rollout": "25"}, (_CONSTRAINT,), (3,), (), False, "s1")


def _validate(value: Any) -> dict[str, Any]:
    """``value`` written, and checked against the schema derived from its class."""
    schemas = SchemaSet()
    reference = schemas.of(type(value))
    written = write_answer(value)
    document = {"$ref": reference["$ref"], "components": {"schemas": schemas.components}}
    jsonschema.Draft202012Validator(document).validate(written)
    return written


def test_a_flag_is_written_with_unleash_keys_in_unleash_order() -> None:
    written = write_answer(FlagAnswer.of(_FLAG))
    assert json.dumps(written) == (
        '{"name": "f", "description": null, "type": "release", "project": "web", '
        '"stale": true, "createdAt": "2024-01-02T03:04:05.678Z", "impressionData": false, '
        '"archived": false, "archivedAt": null, '
        '"dependencies": [{"feature": "parent", "enabled": false, "variants": ["a"]}]}'
    )


def test_a_key_marked_omitted_when_none_is_left_out_not_null() -> None:
    rule = Segment(3, "beta", (_CONSTRAINT,), None, None)
    without = write_answer(SegmentAnswer.of(SegmentDefinition(rule, _AT, "me")))
    assert "project" not in without
    placed = attrs.evolve(rule, project="web")
    with_project = write_answer(SegmentAnswer.of(SegmentDefinition(placed, _AT, "me")))
    assert list(with_project) == [
        "id", "name", "description", "constraints", "project", "createdBy", "createdAt"
    ]  # fmt: skip
    token = ApiToken("t", TokenType.CLIENT, "hash", "ab…", ("web",), "development", _AT, id="x")
    assert "secret" not in write_answer(TokenAnswer.of(token))
    assert write_answer(TokenAnswer.of(token, "web:development.s"))["secret"] == (
        "web:development.s"
    )


def test_an_error_always_has_a_detail_and_a_path_only_when_one_is_known() -> None:
    assert write_answer(ErrorAnswer.of("NotFoundError", "no flag f")) == {
        "name": "NotFoundError",
        "message": "no flag f",
        "details": [{"message": "no flag f"}],
    }
    details = (ErrorDetail("required", "$.name"), ErrorDetail("odd", ""))
    assert write_answer(ErrorAnswer.of("BadDataError", "bad", details))["details"] == [
        {"message": "required", "path": "$.name"},
        {"message": "odd"},
    ]


def test_every_answer_written_satisfies_the_schema_derived_from_its_table() -> None:
    environment = EnvironmentState(
        Environment("production", "production", 2), True, (_STRATEGY,), (Variant("v", 1000),)
    )
    details = FlagDetails(_FLAG, (environment,), (Tag("simple", "x"),))
    written = _validate(FlagDetailsAnswer.of_details(details))
    assert written["environments"][0]["strategies"][0]["parameters"] == {"rollout": "25"}
    _validate(Event(1, "feature-created", "admin", _AT, "f", "web", None, {"a": [1]}, None))
    _validate(ErrorAnswer.of("E", "m", (ErrorDetail("x", "$.a"),)))


def test_the_derived_schema_is_closed_and_requires_every_key_always_sent() -> None:
    schemas = SchemaSet()
    schemas.of(SegmentAnswer)
    segment = schemas.components["SegmentAnswer"]
    assert segment["additionalProperties"] is False
    assert "project" not in segment["required"]  # left out when None
    assert segment["properties"]["project"] == {"type": "string"}
    assert segment["properties"]["description"] == {"type": ["string", "null"]}
    assert segment["properties"]["createdAt"] == {"type": "string", "format": "date-time"}
    assert set(segment["required"]) == {row.key for row in ANSWER_FIELDS[SegmentAnswer]} - {
        "project"
    }


def test_an_answer_table_that_misses_or_misorders_an_attribute_fails_at_import() -> None:
    @attrs.frozen
    class Pair:
        first: str
        second: int

    with pytest.raises(TypeError, match="does not match"):
        answer(AnswerField("first", "first"))(Pair)
    with pytest.raises(TypeError, match="does not match"):
        answer(AnswerField("second", "second"), AnswerField("first", "first"))(Pair)


def test_the_answer_writers_and_the_model_writers_agree_on_nested_model_values() -> None:
    written = write_answer(FlagDetailsAnswer.of_details(FlagDetails(_FLAG)))
    assert written["dependencies"] == wire.converter.unstructure(_FLAG.dependencies)


def _keys(cls: type) -> tuple[list[str], list[str]]:
    """An answer's keys and its always-present keys, a spread row's in its place."""
    keys: list[str] = []
    always: list[str] = []
    hints = typing.get_type_hints(cls)
    for row in ANSWER_FIELDS[cls]:
        if row.spread and spread_mapping(hints[row.attribute]) is not None:
            continue  # the data's own keys: none named
        if row.spread:
            held = [k for k in typing.get_args(hints[row.attribute]) if k is not type(None)]
            inner_keys, inner_always = _keys(held[0] if held else hints[row.attribute])
            keys += inner_keys
            always += [] if held else inner_always
        else:
            keys.append(row.key)
            always += [] if row.omitted_when_none else [row.key]
    return keys, always


def _spread_mapping_of(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    found = [spread_mapping(hints[r.attribute]) for r in ANSWER_FIELDS[cls] if r.spread]
    return next((value for value in found if value is not None), None)


def test_every_registered_answer_has_a_closed_schema_naming_exactly_its_rows() -> None:
    for cls in ANSWER_FIELDS:
        schemas = SchemaSet()
        reference = schemas.of(cls)
        component = schemas.components[reference["$ref"].rsplit("/", 1)[-1]]
        mapped = _spread_mapping_of(cls)
        # Closed, but for an answer spreading a mapping: other keys hold that value type.
        expected = False if mapped is None else SchemaSet().of(mapped)
        assert component["additionalProperties"] == expected, cls
        keys, always = _keys(cls)
        assert list(component["properties"]) == keys, cls
        assert component["required"] == always, cls


def test_a_spread_answer_writes_its_keys_into_its_holder_and_nothing_when_none() -> None:
    trace = VariantTrace("override", "userId", None, 100, None, OverrideMatch("userId", "7"))
    chosen = VariantResult("blue", True, True, {"type": "string", "value": "b"})
    assert write_answer(VariantChoice(chosen, "flag", None, trace)) == {
        "variant": {
            "name": "blue",
            "enabled": True,
            "feature_enabled": True,
            "payload": {"type": "string", "value": "b"},
        },
        "origin": "flag",
        "how": "override",
        "stickiness": "userId",
        "stickinessValue": None,
        "totalWeight": 100,
        "bucket": None,
        "override": {"contextName": "userId", "value": "7"},
    }
    none = VariantResult("disabled", False, True)
    assert write_answer(VariantChoice(none, "none", 2, None)) == {
        "variant": {"name": "disabled", "enabled": False, "feature_enabled": True},
        "origin": "none",
        "strategyIndex": 2,
    }


def test_a_delta_is_written_event_by_event_and_its_schema_names_each_kind() -> None:
    flag = {"name": "f", "enabled": True, "strategies": []}
    delta = DeltaAnswer(
        (
            Hydration(7, (flag,), ()),
            FeatureUpdated(8, flag),
            FeatureRemoved(9, "f", "web"),
            SegmentRemoved(9, 3),
        )
    )
    written = _validate_with_model(delta)
    assert written["events"] == [
        {"type": "hydration", "eventId": 7, "features": [flag], "segments": []},
        {"type": "feature-updated", "eventId": 8, "feature": flag},
        {"type": "feature-removed", "eventId": 9, "featureName": "f", "project": "web"},
        {"type": "segment-removed", "eventId": 9, "segmentId": 3},
    ]
    schemas = SchemaSet()
    schemas.of(DeltaAnswer)
    kinds = schemas.components["DeltaAnswer"]["properties"]["events"]["items"]["anyOf"]
    assert len(kinds) == 5


def _validate_with_model(value: Any) -> dict[str, Any]:
    """Like `_validate`, with the model's components (answers may refer to ``Flag``)."""
    schemas = SchemaSet()
    for cls in wire.FIELDS:
        schemas.of(cls)
    reference = schemas.of(type(value))
    written = write_answer(value)
    document = {"$ref": reference["$ref"], "components": {"schemas": schemas.components}}
    jsonschema.Draft202012Validator(document).validate(written)
    return written


@answer(AnswerField("kind", "kind"), AnswerField("counts", "counts", spread=True))
@attrs.frozen
class _Counted:
    kind: str
    counts: typing.Mapping[str, int]


@answer(AnswerField("note", "note"))
@attrs.frozen
class _Noted:
    note: _Counted | ErrorDetail | None


def test_a_spread_mapping_writes_the_datas_own_keys_and_its_schema_types_them() -> None:
    written = write_answer(_Counted("order", {"b": 2, "a": 1}))
    assert json.dumps(written) == '{"kind": "order", "b": 2, "a": 1}'
    schemas = SchemaSet()
    component = schemas.components[schemas.of(_Counted)["$ref"].rsplit("/", 1)[-1]]
    jsonschema.validate(written, component)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "order", "b": "two"}, component)


def test_an_optional_choice_of_answers_is_null_or_written_by_its_own_writer() -> None:
    assert write_answer(_Noted(None)) == {"note": None}
    assert write_answer(_Noted(ErrorDetail("m", "$.x"))) == {
        "note": {"message": "m", "path": "$.x"}
    }
    assert write_answer(_Noted(_Counted("k", {}))) == {"note": {"kind": "k"}}
