"""`Engine.explain`: the whole decision on one flag, agreeing with is_enabled/get_variant."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from flagcore import Engine
from flagcore.explain import FlagExplanation, NotExplainable
from flagcore.hashing import VARIANT_SEED, normalized_hash, percentage_bucket
from flagcore.model import ClientFeatures, Flag, Strategy
from flagcore.variants import OverrideMatch
from tests.differential.flag_strategies import Scenario, scenarios

CHECKOUT: dict[str, Any] = {
    "name": "checkout",
    "enabled": True,
    "strategies": [
        {"name": "userWithId", "parameters": {"userIds": "7"}},
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
            "segments": [1],
            "variants": [
                {"name": "blue", "weight": 500, "stickiness": "default"},
                {"name": "green", "weight": 500},
            ],
        },
    ],
    "variants": [
        {
            "name": "old",
            "weight": 1000,
            "overrides": [{"contextName": "userId", "values": ["7"]}],
        }
    ],
}
BETA = {
    "id": 1,
    "name": "beta",
    "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO"]}],
}


def _engine(*features: dict[str, Any], segments: tuple[Any, ...] = (BETA,)) -> Engine:
    payload = {"version": 2, "features": list(features), "segments": list(segments)}
    return Engine.from_client_features(payload, explainable=True)


def _user_in_bucket(wanted: range) -> str:
    return next(
        uid for uid in map(str, range(1000)) if percentage_bucket("checkout", uid) in wanted
    )


def _answers_agree(engine: Engine, name: str, context: Any) -> FlagExplanation:
    explanation = engine.explain(name, context)
    assert explanation.enabled is engine.is_enabled(name, context)
    assert explanation.variant == engine.get_variant(name, context)
    assert explanation.variant.payload == engine.get_variant(name, context).payload
    json.dumps(explanation.to_json())  # plain JSON all the way down
    return explanation


def test_rollout_shows_the_stickiness_value_and_the_bucket_it_hashed_to() -> None:
    engine = _engine(CHECKOUT)
    user = _user_in_bucket(range(1, 51))
    context = {"userId": user, "properties": {"plan": "pro", "country": "NO"}}

    explanation = _answers_agree(engine, "checkout", context)

    assert explanation.enabled
    assert explanation.matched_strategy == 1
    first, rollout = explanation.strategies
    assert first.name == "userWithId"
    assert first.result is False
    assert rollout.rollout is not None
    assert rollout.rollout.stickiness_value == user
    assert rollout.rollout.bucket == percentage_bucket("checkout", user)
    assert rollout.rollout.percentage == 50
    (plan,) = rollout.constraints
    assert (plan.context_name, plan.context_value, plan.result) == ("plan", "pro", True)
    (segment,) = rollout.segments
    assert (segment.id, segment.name, segment.result) == (1, "beta", True)
    assert segment.constraints[0].context_value == "NO"
    choice = explanation.variant_choice
    assert choice is not None
    assert choice.origin == "strategy"
    assert choice.strategy_index == 1
    assert choice.trace is not None
    assert choice.trace.how == "hash"
    assert choice.trace.bucket == normalized_hash("checkout", user, 1000, VARIANT_SEED)
    assert explanation.variant.name == ("blue" if choice.trace.bucket <= 500 else "green")


def test_user_outside_the_rollout_is_off_and_the_bucket_says_why() -> None:
    engine = _engine(CHECKOUT)
    user = _user_in_bucket(range(51, 101))
    context = {"userId": user, "properties": {"plan": "pro", "country": "NO"}}

    explanation = _answers_agree(engine, "checkout", context)

    assert not explanation.enabled
    assert explanation.matched_strategy is None
    rollout = explanation.strategies[1]
    assert rollout.constraints_result
    assert rollout.segments_result
    assert rollout.strategy_result is False
    assert rollout.rollout is not None
    assert rollout.rollout.bucket is not None
    assert rollout.rollout.bucket > 50
    assert explanation.variant_choice is None
    assert explanation.variant.name == "disabled"


def test_a_failed_segment_constraint_shows_the_value_it_compared() -> None:
    engine = _engine(CHECKOUT)
    context = {"userId": "1", "properties": {"plan": "pro", "country": "SE"}}

    explanation = _answers_agree(engine, "checkout", context)

    segment = explanation.strategies[1].segments[0]
    assert segment.result is False
    assert segment.constraints[0].context_value == "SE"
    assert explanation.strategies[1].result is False
    assert not explanation.enabled


def test_flag_variant_override_is_named_with_its_field_and_value() -> None:
    engine = _engine(CHECKOUT)

    explanation = _answers_agree(engine, "checkout", {"userId": "7"})

    assert explanation.matched_strategy == 0
    choice = explanation.variant_choice
    assert choice is not None
    assert choice.origin == "flag"
    assert choice.trace is not None
    assert choice.trace.how == "override"
    assert choice.trace.override == OverrideMatch("userId", "7")
    assert explanation.variant.name == "old"


def test_flag_off_in_the_environment_still_shows_its_strategies() -> None:
    engine = _engine({**CHECKOUT, "enabled": False})

    explanation = _answers_agree(engine, "checkout", {"userId": "7"})

    assert not explanation.enabled_in_environment
    assert not explanation.enabled
    assert explanation.strategies[0].result is True  # it would match, were the flag on


def test_dependencies_show_each_parent_and_whether_it_is_satisfied() -> None:
    parent = {"name": "parent", "enabled": True, "strategies": [], "variants": []}
    child = {
        "name": "child",
        "enabled": True,
        "strategies": [],
        "dependencies": [{"feature": "parent"}, {"feature": "missing"}],
    }
    engine = _engine(parent, child)

    explanation = _answers_agree(engine, "child", {})

    present, missing = explanation.dependencies
    assert (present.feature, present.found, present.parent_enabled, present.satisfied) == (
        "parent",
        True,
        True,
        True,
    )
    assert (missing.found, missing.satisfied) == (False, False)
    assert not explanation.dependencies_satisfied
    assert not explanation.enabled


def test_missing_segment_is_named_and_turns_the_flag_off() -> None:
    engine = _engine(CHECKOUT, segments=())

    explanation = _answers_agree(engine, "checkout", {"userId": "7"})

    assert explanation.problem == "segment 1 does not exist"
    assert explanation.strategies[1].segments[0].problem == "segment 1 does not exist"
    assert not explanation.enabled


def test_unknown_strategy_is_shown_as_unknown_and_off() -> None:
    flag = {"name": "f", "enabled": True, "strategies": [{"name": "myOwn", "parameters": {}}]}

    explanation = _answers_agree(_engine(flag), "f", {})

    (strategy,) = explanation.strategies
    assert strategy.known is False
    assert strategy.result is False
    assert not explanation.enabled


def test_strategy_ids_and_titles_of_a_snapshot_are_carried_through() -> None:
    snapshot = ClientFeatures(
        (
            Flag(
                "f",
                enabled=True,
                strategies=(
                    Strategy("userWithId", parameters={"userIds": "1"}, id="s1", title="staff"),
                    Strategy("default", id="s2"),
                ),
            ),
        )
    )
    engine = Engine(snapshot, explainable=True)

    explanation = _answers_agree(engine, "f", {"userId": "2"})

    by_id, default = explanation.strategies
    assert (by_id.id, by_id.title, by_id.result) == ("s1", "staff", False)
    assert (default.id, default.result) == ("s2", True)
    assert explanation.matched_strategy == 1


def test_unknown_flag_is_explained_as_missing_and_off() -> None:
    explanation = _answers_agree(_engine(CHECKOUT), "nope", {"userId": "7"})

    assert not explanation.exists
    assert not explanation.enabled


def test_explaining_needs_an_explainable_engine_so_evaluation_keeps_no_json() -> None:
    engine = Engine.from_client_features({"version": 2, "features": [CHECKOUT]})

    with pytest.raises(NotExplainable):
        engine.explain("checkout", {})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_explanation_answers_as_is_enabled_and_get_variant_on_random_flags(
    scenario: Scenario,
) -> None:
    wire = json.dumps(scenario.payload)
    engine = Engine.from_client_features(json.loads(wire), explainable=True)
    for name in scenario.flag_names:
        for context in scenario.contexts:
            explanation = _answers_agree(engine, name, context)
            if explanation.enabled and explanation.strategies:
                assert explanation.matched_strategy is not None
                assert explanation.strategies[explanation.matched_strategy].result


def test_explanation_follows_a_delta_that_replaces_the_flag() -> None:
    engine = _engine(CHECKOUT)
    assert engine.explain("checkout", {"userId": "7"}).matched_strategy == 0

    replaced = {**CHECKOUT, "strategies": [{"name": "userWithId", "parameters": {"userIds": "8"}}]}
    engine.apply_delta({"events": [{"type": "feature-updated", "feature": replaced}]})

    explanation = _answers_agree(engine, "checkout", {"userId": "7"})
    assert explanation.strategies[0].parameters == {"userIds": "8"}
    assert not explanation.enabled
