"""How the engine compiles: segments changed by deltas after flags compiled, lean IN lists,
the codec as fallback for JSON that is not plainly typed, and model snapshots."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flagcore import Engine, InvalidInput, read_client_features
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


def test_reading_warnings_again_and_again_lets_young_collections_run() -> None:
    import gc
    import weakref

    class Node:
        def __init__(self) -> None:
            self.me = self

    engine = Engine.from_client_features(_payload())
    engine.compile_all()
    alive = []
    for _ in range(3_000):
        node = Node()
        alive.append(weakref.ref(node))
        del node
        assert engine.warnings == ()
    # No gc.collect() here: the collector's own young collections must have freed them.
    assert sum(ref() is not None for ref in alive) < 1_000
    gc.collect()


def test_a_hydration_that_cannot_be_read_leaves_the_old_flags() -> None:
    engine = Engine.from_client_features({"features": [{"name": "f", "enabled": True}]})
    assert engine.is_enabled("f")
    with pytest.raises(InvalidInput):
        engine.apply_delta({"events": [{"type": "hydration", "features": 5}]})
    new = {"name": "g", "enabled": True}
    engine.apply_delta({"events": [{"type": "feature-updated", "feature": new}]})
    assert engine.flag_names() == ("f", "g")
    assert engine.is_enabled("f")
    assert engine.is_enabled("g")


def test_a_long_stream_of_deltas_keeps_no_slots_for_what_is_gone() -> None:
    engine = Engine.from_client_features({"features": []})
    for segment_id in range(300):
        flag = {
            "name": "f",
            "enabled": True,
            "strategies": [{"name": "default", "segments": [segment_id]}],
        }
        segment = {"id": segment_id, "constraints": [_user_in(f"user-{segment_id}")]}
        engine.apply_delta(
            {
                "events": [
                    {"type": "segment-updated", "segment": segment},
                    {"type": "feature-updated", "feature": flag},
                ]
            }
        )
        assert engine.is_enabled("f", {"userId": f"user-{segment_id}"})
        engine.apply_delta({"events": [{"type": "segment-removed", "segmentId": segment_id}]})
        assert not engine.is_enabled("f", {"userId": f"user-{segment_id}"})
    assert len(engine._slots) <= 1  # the last flag's segment only
    assert len(engine._compiler._results) == 0


def test_events_naming_nothing_are_ignored() -> None:
    engine = Engine.from_client_features({"features": [{"name": "f", "enabled": True}]})
    engine.apply_delta(
        {
            "events": [
                {"type": "feature-removed", "featureName": []},
                {"type": "segment-removed", "segmentId": True},
            ]
        }
    )
    assert engine.is_enabled("f")


def test_a_broken_rule_does_not_hide_json_that_cannot_be_read() -> None:
    # The parent has a rule Unleash cannot evaluate *and* a constraint with a number for a
    # name: it cannot be read at all, so it is off without variants, and the child that
    # wants the parent off and not in variant "zz" is on.
    parent = {
        "name": "p",
        "enabled": True,
        "variants": [{"name": "v1", "weight": 100}],
        "strategies": [
            {"name": "default", "constraints": [{"contextName": "x", "operator": "BOGUS"}]},
            {"name": "default", "constraints": [{"contextName": 5, "operator": "IN"}]},
        ],
    }
    child = {
        "name": "c",
        "enabled": True,
        "dependencies": [{"feature": "p", "enabled": False, "variants": ["zz"]}],
    }
    engine = Engine.from_client_features({"features": [parent, child]})
    assert engine.is_enabled("c", {"userId": "1"})
    warnings = {w.flag: w.message for w in engine.warnings}
    assert "$.strategies[1].constraints[0]" in warnings["p"]


def test_malformed_overrides_on_strategy_variants_are_reported() -> None:
    strategy = {
        "name": "default",
        "variants": [{"name": "v1", "weight": 100, "overrides": [{"values": [1]}]}],
    }
    engine = Engine.from_client_features(
        {"features": [{"name": "f", "enabled": True, "strategies": [strategy]}]}
    )
    assert not engine.is_enabled("f")
    assert [w.flag for w in engine.warnings] == ["f"]


def test_strategy_variants_stick_to_the_strategy_stickiness_not_the_user() -> None:
    # The variants carry no stickiness of their own, so the strategy's field decides.
    variants = [{"name": name, "weight": 1} for name in ("a", "b", "c", "d")]
    strategy = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "100", "stickiness": "tenant", "groupId": "g"},
        "variants": variants,
    }
    engine = Engine.from_client_features(
        {"features": [{"name": "f", "enabled": True, "strategies": [strategy]}]}
    )
    for tenant in range(40):
        picked = {
            engine.get_variant("f", {"userId": str(user), "properties": {"tenant": str(tenant)}})
            for user in range(10)
        }
        assert len({v.name for v in picked}) == 1, f"tenant {tenant} got {picked}"


def test_hour_24_is_not_a_constraint_date() -> None:
    constraint = {"contextName": "t", "operator": "DATE_AFTER", "value": "2024-01-01T24:00:00Z"}
    flag = {
        "name": "f",
        "enabled": True,
        "strategies": [{"name": "default", "constraints": [constraint]}],
    }
    engine = Engine.from_client_features({"features": [flag]})
    assert not engine.is_enabled("f", {"properties": {"t": "2025-01-01T00:00:00Z"}})
    assert [w.flag for w in engine.warnings] == ["f"]


@given(
    st.datetimes(
        min_value=dt.datetime(1, 1, 2),
        max_value=dt.datetime(9999, 12, 30),
        timezones=st.one_of(
            st.just(dt.UTC),
            st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
                lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
            ),
        ),
    ),
    st.sampled_from(["seconds", "milliseconds", "microseconds"]),
)
def test_context_dates_in_the_sdk_shape_read_as_the_general_reader_reads_them(
    moment: dt.datetime, timespec: str
) -> None:
    # parse_chrono_date reads this shape with one regular expression; it must agree with
    # the general (chrono) reader on every such text, and with Python on the instant.
    from flagcore.date_reading import _relaxed, parse_chrono_date

    text = moment.isoformat(timespec=timespec).replace("+00:00", "Z")
    key = parse_chrono_date(text)
    assert key == _relaxed(text)
    since_epoch = dt.datetime.fromisoformat(text) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert key == (
        since_epoch.days * 86_400 + since_epoch.seconds,
        since_epoch.microseconds * 1000,
    )


def test_user_ids_are_trimmed_of_unicode_spaces_but_not_of_separators() -> None:
    # As Rust's str::trim in Unleash's engine: NBSP goes, \x1c (a space to Python) stays.
    strategy = {"name": "userWithId", "parameters": {"userIds": "alice\u00a0,\x1cbob"}}
    engine = Engine.from_client_features(
        {"features": [{"name": "f", "enabled": True, "strategies": [strategy]}]}
    )
    assert engine.is_enabled("f", {"userId": "alice"})
    assert not engine.is_enabled("f", {"userId": "bob"})
