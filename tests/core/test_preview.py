"""The preview of a flag change: its counts are the engine's own answers, context by context."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import attrs

from flagcore import Engine, MemoryStore
from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    Segment,
    Strategy,
    Variant,
)
from flagcore.preview import ProposedChange, preview_flag_change, rollout_changes, with_flag
from flagcore.service import Service


def _sample(count: int = 3000, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "userId": f"u{i}",
            "appName": rng.choice(("web", "ios")),
            "properties": {"country": rng.choice(("DE", "FR", "US"))},
        }
        for i in range(count)
    ]


def _rollout(percent: str, **extra: Any) -> Strategy:
    parameters = {"rollout": percent, "stickiness": "default", "groupId": "f"}
    return Strategy("flexibleRollout", parameters, **extra)


def _snapshot(flag: Flag, *others: Flag) -> ClientFeatures:
    segment = Segment(1, "web", (Constraint("appName", "IN", ("web",)),))
    return ClientFeatures((*others, flag), (segment,))


def _direct(snapshot: ClientFeatures, contexts: list[dict[str, Any]]) -> list[bool]:
    engine = Engine(snapshot)
    return [engine.is_enabled("f", context) for context in contexts]


def test_counts_are_the_engines_answers_for_each_sampled_context() -> None:
    contexts = _sample()
    old = _snapshot(
        Flag("f", True, strategies=(_rollout("30", segments=(1,)),)),
        Flag("parent", True, strategies=(Strategy("default"),)),
    )
    new_flag = Flag(
        "f",
        True,
        strategies=(_rollout("60", constraints=(Constraint("country", "IN", ("DE", "FR")),)),),
        dependencies=(Dependency("parent"),),
    )
    new = with_flag(old, new_flag)
    answer = preview_flag_change(old, new, "f", "production", contexts)

    before, after = _direct(old, contexts), _direct(new, contexts)
    ways = Counter(zip(before, after, strict=True))
    assert answer.contexts == len(contexts)
    assert answer.off_to_on.count == ways[(False, True)] > 0
    assert answer.on_to_off.count == ways[(True, False)] > 0
    assert answer.stayed_on == ways[(True, True)]
    assert answer.stayed_off == ways[(False, False)]
    for example in answer.off_to_on.examples:
        index = contexts.index(example)
        assert (before[index], after[index]) == (False, True)
    for example in answer.on_to_off.examples:
        index = contexts.index(example)
        assert (before[index], after[index]) == (True, False)
    assert len(answer.off_to_on.examples) == 3
    assert answer.rollout_only is False
    assert answer.rollout_changes == ()


def test_a_disabled_parent_keeps_the_child_off_in_the_preview_as_in_the_engine() -> None:
    contexts = _sample(200)
    parent = Flag("parent", False, strategies=(Strategy("default"),))
    old = _snapshot(Flag("f", True, strategies=(Strategy("default"),)), parent)
    new = with_flag(old, Flag("f", True, (), dependencies=(Dependency("parent"),)))
    answer = preview_flag_change(old, new, "f", "development", contexts)
    assert answer.on_to_off.count == 200
    assert answer.stayed_on == 0


def test_variant_moves_count_each_change_of_variant_name_as_the_engine_picks() -> None:
    contexts = _sample()
    variants = (Variant("blue", 500), Variant("green", 500))
    old = _snapshot(Flag("f", True, strategies=(_rollout("50"),), variants=variants))
    moved = (Variant("blue", 200), Variant("green", 300), Variant("red", 500))
    new = with_flag(old, attrs.evolve(old.features[0], variants=moved))
    answer = preview_flag_change(old, new, "f", "production", contexts)

    old_engine, new_engine = Engine(old), Engine(new)
    expected = Counter(
        (old_engine.get_variant("f", c).name, new_engine.get_variant("f", c).name) for c in contexts
    )
    expected_moves = {key: count for key, count in expected.items() if key[0] != key[1]}
    got = {(move.from_variant, move.to_variant): move.count for move in answer.variant_moves}
    assert got == expected_moves
    assert set(got) == {("blue", "green"), ("green", "red")}  # weights are cumulative buckets
    assert answer.off_to_on.count == answer.on_to_off.count == 0  # the same 50% are on
    counts = [move.count for move in answer.variant_moves]
    assert counts == sorted(counts, reverse=True)
    for move in answer.variant_moves:
        for example in move.examples:
            assert old_engine.get_variant("f", example).name == move.from_variant
            assert new_engine.get_variant("f", example).name == move.to_variant


def test_turning_a_flag_on_moves_its_contexts_from_disabled_to_their_variant() -> None:
    contexts = _sample(500)
    flag = Flag("f", False, strategies=(Strategy("default"),), variants=(Variant("blue", 1000),))
    old = _snapshot(flag)
    new = with_flag(old, attrs.evolve(flag, enabled=True))
    answer = preview_flag_change(old, new, "f", "production", contexts)
    assert answer.off_to_on.count == 500
    assert [(m.from_variant, m.to_variant, m.count) for m in answer.variant_moves] == [
        ("disabled", "blue", 500)
    ]


def test_a_rollout_only_change_is_stated_exactly_and_matches_the_counts() -> None:
    contexts = _sample(10_000)
    old = _snapshot(Flag("f", True, strategies=(_rollout("10"),)))
    new = with_flag(old, Flag("f", True, strategies=(_rollout("50"),)))
    answer = preview_flag_change(old, new, "f", "production", contexts)

    assert answer.rollout_only is True
    [change] = answer.rollout_changes
    assert (change.before, change.after, change.stickiness, change.group_id) == (
        10,
        50,
        "default",
        "f",
    )
    assert change.statement.startswith("+40% of users by default stickiness")
    # Exactly: nobody who had it loses it, and about 40% of the sample gains it.
    assert answer.on_to_off.count == 0
    assert 3700 < answer.off_to_on.count < 4300


def test_a_rollout_lowered_by_user_id_says_minus_and_by_user_id() -> None:
    old = Flag("f", True, strategies=(_rollout("50", constraints=()),))
    lowered = Strategy("flexibleRollout", {"rollout": "20", "stickiness": "userId", "groupId": "f"})
    before = attrs.evolve(
        old, strategies=(attrs.evolve(lowered, parameters={**lowered.parameters, "rollout": "50"}),)
    )
    changes = rollout_changes(before, attrs.evolve(old, strategies=(lowered,)))
    assert changes is not None
    assert changes[0].statement == "-30% of users by userId: 50% → 20%, turned off"


def test_a_change_beyond_percentages_is_not_called_rollout_only() -> None:
    old = Flag("f", True, strategies=(_rollout("10"),))
    other_group = Strategy(
        "flexibleRollout", {"rollout": "50", "stickiness": "default", "groupId": "g"}
    )
    assert rollout_changes(old, attrs.evolve(old, strategies=(other_group,))) is None
    constrained = _rollout("50", constraints=(Constraint("country", "IN", ("DE",)),))
    assert rollout_changes(old, attrs.evolve(old, strategies=(constrained,))) is None
    assert (
        rollout_changes(old, attrs.evolve(old, enabled=False, strategies=(_rollout("50"),))) is None
    )
    assert (
        rollout_changes(old, attrs.evolve(old, strategies=(_rollout("10"), Strategy("default"))))
        is None
    )
    assert rollout_changes(old, old) is None
    assert rollout_changes(None, old) is None


def test_a_strategy_with_constraints_says_its_statement_holds_among_what_they_let_through() -> None:
    constraints = (Constraint("country", "IN", ("DE",)),)
    old = Flag("f", True, strategies=(_rollout("10", constraints=constraints),))
    new = attrs.evolve(old, strategies=(_rollout("25", constraints=constraints),))
    changes = rollout_changes(old, new)
    assert changes is not None
    assert changes[0].statement.endswith(
        "among the contexts its constraints and segments let through"
    )


def test_an_empty_sample_previews_to_zero_everywhere() -> None:
    old = _snapshot(Flag("f", True, strategies=(_rollout("10"),)))
    new = with_flag(old, Flag("f", False))
    answer = preview_flag_change(old, new, "f", "production", [])
    assert (answer.contexts, answer.off_to_on.count, answer.on_to_off.count) == (0, 0, 0)


def test_the_service_previews_a_change_on_the_uploaded_sample_without_saving_it() -> None:
    service = Service(MemoryStore())
    service.flags.create_flag("default", "f")
    service.strategies.add_strategy("default", "f", "production", _rollout("20"))
    service.environments.set_environment_enabled("default", "f", "production", True)
    contexts = _sample(1000)
    service.previews.replace_context_sample("production", contexts)
    revision = service.storage.revision()

    answer = service.previews.preview_change(
        "default", "production", "f", ProposedChange(strategies=(_rollout("70"),))
    )

    snapshot = service.client.client_features("production")
    changed = attrs.evolve(snapshot.features[0], strategies=(_rollout("70"),))
    ways = Counter(
        zip(
            _direct(snapshot, contexts),
            _direct(with_flag(snapshot, changed), contexts),
            strict=True,
        )
    )
    assert answer.contexts == 1000
    assert (answer.off_to_on.count, answer.on_to_off.count) == (ways[(False, True)], 0)
    assert answer.rollout_only is True
    assert service.storage.revision() == revision
    assert (
        service.strategies.list_strategies("default", "f", "production")[0].parameters["rollout"]
        == "20"
    )
