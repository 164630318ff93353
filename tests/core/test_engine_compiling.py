"""How the engine compiles: segments changed by deltas after flags compiled, lean IN lists,
the codec as fallback for JSON that is not plainly typed, and model snapshots."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from flagcore import Engine, read_client_features
from flagcore.operators import membership_predicate


def _payload() -> dict[str, Any]:
    def flag(name: str, segments: list[int]) -> dict[str, Any]:
        strategy = {"name": "default", "parameters": {}, "segments": segments}
        return {"name": name, "enabled": True, "strategies": [strategy]}

    return {
        "version": 2,
        "features": [
            flag("beta-only", [7]),
            flag("beta-and-staff", [7, 8]),
            flag("everyone", []),
            {
                "name": "two-ways",
                "enabled": True,
                "strategies": [
                    {"name": "default", "segments": [7]},
                    {
                        "name": "default",
                        "constraints": [
                            {"contextName": "appName", "operator": "IN", "values": ["ops"]}
                        ],
                    },
                ],
            },
        ],
        "segments": [
            {"id": 7, "constraints": [_user_in("1", "2")]},
            {"id": 8, "constraints": [{"contextName": "staff", "operator": "IN", "values": ["y"]}]},
        ],
    }


def _user_in(*users: str) -> dict[str, Any]:
    return {"contextName": "userId", "operator": "IN", "values": list(users)}


def _segment_updated(segment_id: int, *constraints: dict[str, Any]) -> dict[str, Any]:
    event = {"type": "segment-updated", "segment": {"id": segment_id, "constraints": constraints}}
    return {"events": [event]}


def test_a_changed_segment_changes_flags_compiled_before_the_change() -> None:
    engine = Engine.from_client_features(_payload())
    engine.compile_all()
    assert engine.is_enabled("beta-only", {"userId": "1"})
    assert engine.is_enabled("beta-and-staff", {"userId": "1", "properties": {"staff": "y"}})

    engine.apply_delta(_segment_updated(7, _user_in("3")))

    assert not engine.is_enabled("beta-only", {"userId": "1"})
    assert engine.is_enabled("beta-only", {"userId": "3"})
    assert engine.is_enabled("beta-and-staff", {"userId": "3", "properties": {"staff": "y"}})
    assert not engine.is_enabled("beta-and-staff", {"userId": "3"})
    assert engine.is_enabled("everyone")
    assert engine.warnings == ()


def test_a_removed_segment_turns_its_flags_off_until_it_returns() -> None:
    engine = Engine.from_client_features(_payload())
    assert engine.is_enabled("two-ways", {"appName": "ops"})

    engine.apply_delta({"events": [{"type": "segment-removed", "segmentId": 7}]})

    # As in Unleash: a strategy that names a missing segment turns the whole flag off,
    # even where another of its strategies would match.
    assert not engine.is_enabled("two-ways", {"appName": "ops"})
    assert not engine.is_enabled("beta-only", {"userId": "1"})
    assert engine.is_enabled("everyone")
    assert {w.flag for w in engine.warnings} == {"beta-only", "beta-and-staff", "two-ways"}
    assert all("segment 7" in w.message for w in engine.warnings)

    engine.apply_delta(_segment_updated(7, _user_in("1")))

    assert engine.is_enabled("two-ways", {"appName": "ops"})
    assert engine.is_enabled("beta-only", {"userId": "1"})
    assert engine.warnings == ()


def test_a_segment_that_stops_compiling_turns_its_flags_off_with_a_warning() -> None:
    engine = Engine.from_client_features(_payload())
    engine.compile_all()
    broken = {"contextName": "signup", "operator": "DATE_AFTER", "value": "not a date"}

    engine.apply_delta(_segment_updated(8, broken))

    assert not engine.is_enabled("beta-and-staff", {"userId": "1", "properties": {"staff": "y"}})
    assert engine.get_variant("beta-and-staff", {"userId": "1"}).feature_enabled is False
    assert engine.is_enabled("beta-only", {"userId": "1"})
    ((flag, message),) = [(w.flag, w.message) for w in engine.warnings]
    assert flag == "beta-and-staff"
    assert "segment 8" in message


def test_a_flag_replaced_by_a_delta_follows_its_new_segments_only() -> None:
    engine = Engine.from_client_features(_payload())
    assert engine.is_enabled("beta-only", {"userId": "1"})
    replaced = {"name": "beta-only", "enabled": True, "strategies": [{"name": "default"}]}
    engine.apply_delta({"events": [{"type": "feature-updated", "feature": replaced}]})

    engine.apply_delta({"events": [{"type": "segment-removed", "segmentId": 7}]})

    assert engine.is_enabled("beta-only", {"userId": "anyone"})
    assert "beta-only" not in {w.flag for w in engine.warnings}


@given(
    values=st.lists(st.text(alphabet="ab\x00", max_size=3), max_size=12),
    probe=st.text(alphabet="ab\x00", max_size=4),
)
@example(values=["a", "b", "aa", "ab", "ba"], probe="a\x00b")  # spans two joined values
def test_membership_is_exactly_list_membership(values: list[str], probe: str) -> None:
    # NUL is the separator of long lists: values and probes holding it must not confuse it.
    def test(*, not_in: bool, inverted: bool) -> bool:
        return membership_predicate(_same, values, not_in=not_in, inverted=inverted)(probe)

    assert test(not_in=False, inverted=False) == (probe in values)
    assert test(not_in=True, inverted=False) == (probe not in values)
    assert test(not_in=False, inverted=True) == (probe not in values)


def _same(value: str) -> str:
    return value


def test_lists_that_join_to_the_same_text_are_different_constraints() -> None:
    def flag(name: str, values: list[str]) -> dict[str, Any]:
        constraint = {"contextName": "userId", "operator": "IN", "values": values}
        strategy = {"name": "default", "constraints": [constraint]}
        return {"name": name, "enabled": True, "strategies": [strategy]}

    engine = Engine.from_client_features(
        {"features": [flag("first", ["a\x00", "b"]), flag("second", ["a", "\x00b"])]}
    )
    assert not engine.is_enabled("first", {"userId": "a"})
    assert engine.is_enabled("second", {"userId": "a"})
    assert engine.is_enabled("first", {"userId": "a\x00"})


def test_json_that_is_not_plainly_typed_compiles_through_the_codec() -> None:
    # Older servers send numbers as parameters; the codec reads them as text.
    strategy = {"name": "flexibleRollout", "parameters": {"rollout": 100, "stickiness": "userId"}}
    engine = Engine.from_client_features(
        {"features": [{"name": "f", "enabled": True, "strategies": [strategy]}]}
    )
    assert engine.is_enabled("f", {"userId": "u"})
    assert engine.warnings == ()


def test_an_engine_built_from_models_answers_like_one_built_from_json() -> None:
    payload = _payload()
    from_models = Engine(read_client_features(payload).snapshot)
    from_json = Engine.from_client_features(payload)
    contexts: list[dict[str, Any]] = [
        {},
        {"userId": "1"},
        {"userId": "2", "properties": {"staff": "y"}},
        {"appName": "ops"},
    ]
    for name in from_json.flag_names():
        for context in contexts:
            assert from_models.is_enabled(name, context) == from_json.is_enabled(name, context)
    assert from_models.flag_names() == from_json.flag_names()
