"""Reading and writing Unleash's client-features JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flagcore import Engine, read_client_features, unstructure_client_features
from flagcore.errors import InvalidInput
from flagcore.wire import structure_flag
from tests.conftest import client_spec_dir

SEGMENTED = {
    "version": 2,
    "features": [
        {
            "name": "seg",
            "enabled": True,
            "strategies": [
                {
                    "name": "default",
                    "parameters": {},
                    "segments": [7],
                    "constraints": [
                        {"contextName": "appName", "operator": "IN", "values": ["web"]}
                    ],
                }
            ],
        }
    ],
    "segments": [
        {
            "id": 7,
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
        }
    ],
}


def _spec_states() -> list[Any]:
    specs = client_spec_dir() / "specifications"
    names = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    return [
        pytest.param(json.loads((specs / name).read_text(encoding="utf-8"))["state"], id=name)
        for name in names
    ]


@pytest.mark.parametrize("state", _spec_states())
def test_writing_then_reading_a_payload_gives_the_same_snapshot(state: dict[str, Any]) -> None:
    snapshot = read_client_features(state).snapshot
    again = read_client_features(json.loads(json.dumps(unstructure_client_features(snapshot))))
    assert again.problems == ()
    assert again.snapshot == snapshot


def test_without_segment_support_segment_constraints_follow_the_strategys_own() -> None:
    """Format 1, the documented version 1 for SDKs below spec 4.2.0: each segment's
    constraints appended after the strategy's own, no segment list, and the legacy keys
    after Unleash's own."""
    snapshot = read_client_features(SEGMENTED).snapshot
    v1 = unstructure_client_features(snapshot, version=1)
    assert v1["version"] == 1
    assert "segments" not in v1
    (feature,) = v1["features"]
    strategy = feature["strategies"][0]
    assert "segments" not in strategy
    assert [c["contextName"] for c in strategy["constraints"]] == ["appName", "userId"]
    assert list(feature) == [
        "name",
        "type",
        "enabled",
        "project",
        "stale",
        "strategies",
        "variants",
        "description",
        "impressionData",
        "strategy",
        "parameters",
    ]
    assert strategy["constraints"][0] == {
        "values": ["web"],
        "operator": "IN",
        "contextName": "appName",
    }
    # Both formats evaluate the same way.
    for ctx in ({"userId": "1", "appName": "web"}, {"userId": "3", "appName": "web"}):
        assert Engine.from_client_features(v1).is_enabled(
            "seg", ctx
        ) is Engine.from_client_features(SEGMENTED).is_enabled("seg", ctx)


def test_format_2_keeps_segment_ids_and_lists_segments() -> None:
    v2 = unstructure_client_features(read_client_features(SEGMENTED).snapshot)
    assert v2["version"] == 2
    assert v2["features"][0]["strategies"][0]["segments"] == [7]
    assert v2["segments"][0]["id"] == 7
    assert "strategy" not in v2["features"][0]
    assert "parameters" not in v2["features"][0]


def test_format_1_legacy_keys_name_the_first_strategy_or_default_without_one() -> None:
    rollout = {"name": "flexibleRollout", "parameters": {"rollout": "50", "groupId": "g"}}
    state = {
        "features": [
            {"name": "two", "enabled": True, "strategies": [rollout, {"name": "default"}]},
            {"name": "none", "enabled": True, "strategies": []},
        ]
    }
    v1 = unstructure_client_features(read_client_features(state).snapshot, version=1)
    by_name = {feature["name"]: feature for feature in v1["features"]}
    assert by_name["two"]["strategy"] == "flexibleRollout"
    assert by_name["two"]["parameters"] == {"rollout": "50", "groupId": "g"}
    # A copy: what the legacy keys hold is not the strategy's own dict.
    assert by_name["two"]["parameters"] is not by_name["two"]["strategies"][0]["parameters"]
    assert (by_name["none"]["strategy"], by_name["none"]["parameters"]) == ("default", {})
    # Both read back the same, the legacy keys ignored, as every Unleash SDK of today does.
    engine = Engine.from_client_features(json.loads(json.dumps(v1)))
    assert engine.is_enabled("none")
    assert engine.warnings == ()


@pytest.mark.parametrize(
    # Segments are inlined in format 1, so only states without any read back the same
    # (the segmented case is pinned above).
    "state",
    [s for s in _spec_states() if not read_client_features(s.values[0]).snapshot.segments],
)
def test_format_1_reads_back_to_the_same_flags(state: dict[str, Any]) -> None:
    snapshot = read_client_features(state).snapshot
    v1 = json.loads(json.dumps(unstructure_client_features(snapshot, version=1)))
    again = read_client_features(v1)
    assert again.problems == ()
    assert again.snapshot == snapshot


def test_a_malformed_flag_is_reported_with_its_path_and_the_rest_still_loads() -> None:
    payload = {
        "features": [
            {"name": "good", "enabled": True, "strategies": []},
            {
                "name": "bad",
                "enabled": True,
                "strategies": [
                    {
                        "name": "default",
                        "constraints": [
                            {
                                "contextName": "x",
                                "operator": "IN",
                                "values": "not-a-list",
                                "inverted": "yes",
                            }
                        ],
                    }
                ],
            },
        ]
    }
    engine = Engine.from_client_features(payload)
    assert engine.is_enabled("good")
    assert not engine.is_enabled("bad")
    assert engine.get_variant("bad").feature_enabled is False
    (warning,) = engine.warnings
    assert warning.flag == "bad"
    assert "$.strategies[0].constraints[0].inverted" in warning.message


def test_structure_errors_name_json_paths() -> None:
    with pytest.raises(InvalidInput) as caught:
        structure_flag({"name": "f", "enabled": "true", "strategies": [{"name": 3}]})
    paths = {detail.path for detail in caught.value.details}
    assert paths == {"$.enabled", "$.strategies[0].name"}


def test_numeric_parameters_from_older_servers_are_read_as_strings() -> None:
    flag = structure_flag(
        {
            "name": "f",
            "enabled": True,
            "strategies": [
                {"name": "flexibleRollout", "parameters": {"rollout": 100, "sticky": True}}
            ],
        }
    )
    assert dict(flag.strategies[0].parameters) == {"rollout": "100", "sticky": "true"}


def test_nulls_for_lists_mean_empty() -> None:
    flag = structure_flag({"name": "f", "enabled": True, "strategies": None, "variants": None})
    assert flag.strategies == ()
    assert flag.variants == ()


def test_delta_events_update_remove_and_hydrate() -> None:
    engine = Engine.from_client_features(SEGMENTED)
    assert engine.is_enabled("seg", {"userId": "1", "appName": "web"})
    engine.apply_delta({"events": [{"eventId": 2, "type": "segment-removed", "segmentId": 7}]})
    assert not engine.is_enabled("seg", {"userId": "1", "appName": "web"})
    engine.apply_delta(
        {
            "events": [
                {
                    "eventId": 3,
                    "type": "feature-updated",
                    "feature": {"name": "new", "enabled": True, "strategies": []},
                },
                {
                    "eventId": 4,
                    "type": "feature-removed",
                    "featureName": "seg",
                    "project": "default",
                },
            ]
        }
    )
    assert engine.flag_names() == ("new",)
    engine.apply_delta(
        {"events": [{"eventId": 5, "type": "hydration", "features": [], "segments": []}]}
    )
    assert engine.flag_names() == ()


def _json_values() -> Any:
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 1000),
        st.floats(allow_nan=False),
        st.sampled_from(["", "a", "IN", "fix", "variable", "default", "1.0", "x y"]),
    )
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=5)


def _wire_flags() -> Any:
    from hypothesis import strategies as st

    def maybe(strategy: Any) -> Any:
        return st.one_of(strategy, _json_values())

    constraint = st.fixed_dictionaries(
        {
            "contextName": maybe(st.sampled_from(["userId", "x"])),
            "operator": maybe(st.sampled_from(["IN", "NUM_GT"])),
        },
        optional={
            "values": maybe(st.lists(st.sampled_from(["a", "b"]), max_size=3)),
            "value": maybe(st.sampled_from(["1", "2"])),
            "inverted": maybe(st.booleans()),
            "caseInsensitive": maybe(st.booleans()),
        },
    )
    variant = st.fixed_dictionaries(
        {"name": maybe(st.sampled_from(["v1", "v2"])), "weight": maybe(st.integers(0, 1000))},
        optional={
            "weightType": maybe(st.sampled_from(["fix", "variable"])),
            "stickiness": maybe(st.sampled_from(["default", "userId"])),
            "payload": maybe(
                st.fixed_dictionaries({"type": st.just("string"), "value": st.just("p")})
            ),
            "overrides": maybe(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "contextName": st.just("userId"),
                            "values": st.lists(st.just("u"), max_size=2),
                        }
                    ),
                    max_size=2,
                )
            ),
        },
    )
    strategy = st.fixed_dictionaries(
        {"name": maybe(st.sampled_from(["default", "flexibleRollout"]))},
        optional={
            "parameters": maybe(
                st.dictionaries(
                    st.sampled_from(["rollout", "groupId"]),
                    st.one_of(st.just("50"), st.integers(0, 100), st.booleans()),
                )
            ),
            "constraints": maybe(st.lists(constraint, max_size=2)),
            "segments": maybe(st.lists(st.integers(1, 3), max_size=2)),
            "variants": maybe(st.lists(variant, max_size=2)),
            "disabled": maybe(st.booleans()),
            "sortOrder": maybe(st.integers(0, 3)),
        },
    )
    return st.fixed_dictionaries(
        {"name": maybe(st.sampled_from(["f", "g"]))},
        optional={
            "enabled": maybe(st.booleans()),
            "type": maybe(st.just("release")),
            "strategies": maybe(st.lists(strategy, max_size=2)),
            "variants": maybe(st.lists(variant, max_size=2)),
            "dependencies": maybe(
                st.lists(
                    st.fixed_dictionaries(
                        {"feature": st.just("p")}, optional={"enabled": st.booleans()}
                    ),
                    max_size=1,
                )
            ),
            "impressionData": maybe(st.booleans()),
            "stale": maybe(st.booleans()),
        },
    )


def test_the_fast_reader_builds_what_the_converter_builds() -> None:
    from hypothesis import given, settings

    from flagcore import wire
    from flagcore.model import Flag
    from flagcore.wire import reading

    @settings(max_examples=400)
    @given(_wire_flags())
    def check(data: dict[str, Any]) -> None:
        try:
            fast = reading.read_flag(data)
        except (reading.NotFast, KeyError):
            return  # the converter reads it (and reports problems); nothing to compare
        assert fast == wire.converter.structure(data, Flag)

    check()


def test_the_fast_writer_writes_what_the_converter_writes() -> None:
    from hypothesis import given, settings

    from flagcore import wire
    from flagcore.model import Segment
    from flagcore.wire import writing

    @settings(max_examples=400)
    @given(_wire_flags())
    def check(data: dict[str, Any]) -> None:
        try:
            flag = wire.structure_flag(data)
        except InvalidInput:
            return
        assert writing.write_flag(flag) == wire.converter.unstructure(flag)
        for strategy in flag.strategies:
            segment = Segment(1, "s", strategy.constraints, "about", "project")
            assert writing.write_segment(segment) == wire.converter.unstructure(segment)

    check()


def test_the_fast_writer_writes_every_field_the_converter_writes() -> None:
    from flagcore import wire
    from flagcore.model import (
        Constraint,
        Dependency,
        Flag,
        Override,
        Payload,
        Strategy,
        Variant,
        WeightType,
    )
    from flagcore.wire import writing

    variant = Variant(
        "blue",
        40,
        WeightType.FIX,
        "sessionId",
        Payload("json", '{"a": 1}'),
        (Override("userId", ("u1", "u2")),),
    )
    flag = Flag(
        "everything",
        True,
        "experiment",
        "a description",
        "web",
        True,
        True,
        (
            Strategy(
                "flexibleRollout",
                {"rollout": "50"},
                (Constraint("country", "STR_STARTS_WITH", ("N",), "x", True, True),),
                (3, 1),
                (variant,),
                True,
                "strategy-id",
                "a title",
                7,
            ),
        ),
        (variant,),
        (Dependency("parent", False, ("blue",)),),
    )
    assert writing.write_flag(flag) == wire.converter.unstructure(flag)


# --- strict reading: wrong JSON types are refused with the JSON path, never coerced ---


@pytest.mark.parametrize(
    ("data", "cls", "path", "message"),
    [
        (
            {"contextName": "u", "operator": "IN", "values": "u1,u2"},
            "Constraint",
            "$.values",
            "expected an array, got a string",
        ),
        (
            {"contextName": "u", "operator": "IN", "values": {"u1": 1}},
            "Constraint",
            "$.values",
            "expected an array, got an object",
        ),
        ({"operator": "IN"}, "Constraint", "$.contextName", "required field missing"),
        (
            {"contextName": "u", "operator": "IN", "caseInsensitive": 1},
            "Constraint",
            "$.caseInsensitive",
            "expected a boolean, got a number",
        ),
        (
            {"contextName": 5, "operator": "IN"},
            "Constraint",
            "$.contextName",
            "expected a string, got a number",
        ),
        (
            {"name": "v", "weight": "500"},
            "Variant",
            "$.weight",
            "expected an integer, got a string",
        ),
        ({"name": "v", "weight": 1.5}, "Variant", "$.weight", "expected an integer, got a number"),
        (
            {"name": "v", "weight": 2**63},
            "Variant",
            "$.weight",
            "expected an integer between -2^63 and 2^63-1",
        ),
        (
            {"name": "v", "weightType": "fixed"},
            "Variant",
            "$.weightType",
            "expected one of variable, fix, got 'fixed'",
        ),
        (
            {"name": "v", "overrides": [{"contextName": "userId", "values": "u1"}]},
            "Variant",
            "$.overrides[0].values",
            "expected an array, got a string",
        ),
        ({"name": "s", "segments": [True]}, "Strategy", "$.segments[0]", "expected an integer"),
        ({"name": "s", "sortOrder": "1"}, "Strategy", "$.sortOrder", "expected an integer"),
        (
            {"name": "s", "parameters": {"rollout": [50]}},
            "Strategy",
            "$.parameters.rollout",
            "expected a string, got an array",
        ),
        (
            {"name": "s", "parameters": {"a b": {}}},
            "Strategy",
            '$.parameters["a b"]',
            "expected a string, got an object",
        ),
        ({"name": "s", "parameters": ["rollout"]}, "Strategy", "$.parameters", "an object"),
        ({"name": "f", "impressionData": "yes"}, "Flag", "$.impressionData", "a boolean"),
        ({"feature": "p", "variants": "blue"}, "Dependency", "$.variants", "an array"),
    ],
)
def test_a_wrong_json_type_is_refused_with_the_camel_case_path(
    data: dict[str, Any], cls: str, path: str, message: str
) -> None:
    from flagcore import model, wire

    with pytest.raises(InvalidInput) as caught:
        wire.structure(data, getattr(model, cls))
    details = [(d.path, d.message) for d in caught.value.details]
    assert any(p == path and message in m for p, m in details), details


def test_a_whole_number_sent_as_a_float_is_an_integer_as_in_json_schema() -> None:
    from flagcore import wire
    from flagcore.model import Variant

    assert wire.structure({"name": "v", "weight": 500.0}, Variant).weight == 500


def test_every_problem_in_a_body_is_reported_not_only_the_first() -> None:
    from flagcore import wire
    from flagcore.model import Strategy

    with pytest.raises(InvalidInput) as caught:
        wire.structure(
            {
                "name": 1,
                "constraints": [{"contextName": "a", "operator": "IN"}, "x"],
                "variants": [{"weight": 1}],
            },
            Strategy,
        )
    assert [d.path for d in caught.value.details] == [
        "$.name",
        "$.constraints[1]",
        "$.variants[0].name",
    ]


def test_null_in_a_field_with_a_default_means_the_default_and_in_a_required_one_is_refused() -> (
    None
):
    from flagcore import wire
    from flagcore.model import Constraint, Strategy

    strategy = wire.structure(
        {"name": "s", "constraints": None, "disabled": None, "sortOrder": None}, Strategy
    )
    assert (strategy.constraints, strategy.disabled, strategy.sort_order) == ((), False, None)
    with pytest.raises(InvalidInput) as caught:
        wire.structure({"contextName": None, "operator": "IN"}, Constraint)
    assert [d.path for d in caught.value.details] == ["$.contextName"]


def test_request_classes_report_their_camel_case_names() -> None:
    from flagcore_http import wire as http_wire
    from flagcore_http.wire import CreateToken, StrategySegments

    with pytest.raises(InvalidInput) as caught:
        http_wire.structure({"type": "client"}, CreateToken)
    assert [d.path for d in caught.value.details] == ["$.tokenName"]
    with pytest.raises(InvalidInput) as caught:
        http_wire.structure(
            {"projectId": "p", "strategyId": "s", "environmentId": "e", "segmentIds": "1,2"},
            StrategySegments,
        )
    assert [d.path for d in caught.value.details] == ["$.segmentIds"]


def test_a_flag_whose_constraint_values_are_a_string_turns_off_instead_of_matching_letters() -> (
    None
):
    flag = {
        "name": "f",
        "enabled": True,
        "strategies": [
            {
                "name": "default",
                "constraints": [{"contextName": "userId", "operator": "IN", "values": "abc"}],
            }
        ],
    }
    engine = Engine.from_client_features({"features": [flag]})
    assert not engine.is_enabled("f", {"userId": "a"})
    assert "$.strategies[0].constraints[0].values" in engine.warnings[0].message


# --- model values built in Python: InvalidInput naming the field, not a TypeError ---


def test_a_constraint_built_with_none_values_is_invalid_input_naming_values() -> None:
    from flagcore.limits import Limits
    from flagcore.model import Constraint
    from flagcore.validation import check_constraints

    with pytest.raises(InvalidInput) as caught:
        check_constraints(
            [Constraint("v", "SEMVER_EQ", None, "v1.2.3")],  # type: ignore[arg-type]
            Limits(),
            "$.constraints",
        )
    assert [d.path for d in caught.value.details] == ["$.constraints[0].values"]


def test_a_strategy_built_with_wrong_types_names_every_wrong_field() -> None:
    from flagcore.limits import Limits
    from flagcore.model import Constraint, Strategy, Variant
    from flagcore.validation import check_strategy

    strategy = Strategy(
        "default",
        {"rollout": 50},  # type: ignore[dict-item]
        (Constraint(5, "IN", ("a", 3)),),  # type: ignore[arg-type]
        ("1",),  # type: ignore[arg-type]
        (Variant("v", "5", "fix"),),  # type: ignore[arg-type]
        disabled="no",  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidInput) as caught:
        check_strategy(strategy, {"default": object()}, Limits())
    assert [d.path for d in caught.value.details] == [
        "$.parameters",
        "$.constraints[0].contextName",
        "$.constraints[0].values[1]",
        "$.segments[0]",
        "$.variants[0].weight",
        "$.variants[0].weightType",
        "$.disabled",
    ]


def test_a_string_given_where_constraints_belong_is_not_read_as_characters() -> None:
    from flagcore.limits import Limits
    from flagcore.validation import check_constraints

    with pytest.raises(InvalidInput) as caught:
        check_constraints("abc", Limits(), "$.constraints")  # type: ignore[arg-type]
    assert [d.path for d in caught.value.details] == ["$.constraints"]


def test_a_lone_surrogate_in_a_model_string_is_refused() -> None:
    from flagcore.model import Payload, Variant
    from flagcore.validation import check_variants

    with pytest.raises(InvalidInput) as caught:
        check_variants([Variant("v", 0, payload=Payload("string", "a\ud800"))], "$.variants")
    assert [d.path for d in caught.value.details] == ["$.variants[0].payload.value"]


def test_well_typed_models_pass_the_type_check() -> None:
    from flagcore.model import Constraint, Override, Payload, Strategy, Variant, WeightType
    from flagcore.validation import check_model

    check_model(
        Strategy(
            "flexibleRollout",
            {"rollout": "50"},
            (Constraint("country", "IN", ("NO",), None, True, True),),
            (1,),
            (
                Variant(
                    "v",
                    1000,
                    WeightType.FIX,
                    "userId",
                    Payload("json", "{}"),
                    (Override("userId", ("u",)),),
                ),
            ),
            False,
            "id",
            None,
            3,
        ),
        Strategy,
    )


def test_a_body_with_many_wrong_items_gets_a_bounded_list_of_problems() -> None:
    from flagcore import wire
    from flagcore.model import Constraint

    with pytest.raises(InvalidInput) as caught:
        wire.structure({"contextName": "c", "operator": "IN", "values": [1] * 10_000}, Constraint)
    details = caught.value.details
    assert len(details) == wire.MAX_ERROR_DETAILS + 1
    assert details[0].path == "$.values[0]"
    assert details[-1].message == f"and {10_000 - wire.MAX_ERROR_DETAILS} more problems"
