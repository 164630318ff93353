"""Who will this flip? A proposed flag change evaluated on a sample of contexts.

The old and the new rules are scored with the engine itself (`Engine`, the evaluator
behind SDK payloads, the playground and ``explain``), each context once under each, so a
count here is what SDKs would answer, not an estimate of it: a context counted "off → on"
is one the new rules turn on. Strategies that draw at random (``gradualRolloutRandom``,
``random`` stickiness, the default stickiness for a context without userId or sessionId)
are the one exception: their contexts are drawn again here, as an SDK would.

A change that only moves sticky rollout percentages (same strategies, same groups, same
stickiness, constraints and segments) is also stated exactly (`rollout_changes`): the
buckets a rollout hashes into do not depend on the percentage, so going from 10% to 50%
turns on exactly the buckets 11 to 50 ("+40% of users by userId") and turns off nobody.

Pure: no store, no I/O. `flagcore.service.previews` reads the flags and the sample.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from flagcore.engine import Engine
from flagcore.model import ClientFeatures, Flag, Strategy, Variant
from flagcore.operators import BrokenRule
from flagcore.strategies import rollout_plan
from flagcore.wire import PreviewAnswer, PreviewFlips, RolloutChange, VariantMove

__all__ = [
    "EXAMPLES_SHOWN",
    "ProposedChange",
    "preview_flag_change",
    "rollout_changes",
    "with_flag",
]

EXAMPLES_SHOWN = 3
"""Example contexts kept for each way a context can move (the first ones met)."""

_STICKINESS_WORDS = {
    "default": "default stickiness (userId, else sessionId, else random)",
    "random": "random stickiness (drawn again on every evaluation)",
}


def with_flag(snapshot: ClientFeatures, flag: Flag, segments: Iterable[Any] = ()) -> ClientFeatures:
    """``snapshot`` with ``flag`` in place of the flag of its name (added when absent),
    and ``segments`` added to those it holds: the other flags stay, so a dependency on
    a parent flag is evaluated as before."""
    features = [f for f in snapshot.features if f.name != flag.name]
    features.append(flag)
    known = {segment.id: segment for segment in snapshot.segments}
    known.update((segment.id, segment) for segment in segments)
    return ClientFeatures(tuple(features), tuple(known.values()))


def _has_variants(snapshot: ClientFeatures, name: str) -> bool:
    flag = _flag(snapshot, name)
    if flag is None:
        return False
    return bool(flag.variants) or any(s.variants for s in flag.strategies)


def preview_flag_change(
    before: ClientFeatures,
    after: ClientFeatures,
    flag: str,
    environment: str,
    contexts: Sequence[Mapping[str, Any]],
    *,
    examples: int = EXAMPLES_SHOWN,
) -> PreviewAnswer:
    """What replacing ``before`` by ``after`` does to flag ``flag`` for each of
    ``contexts`` (Unleash's camelCase context mappings; properties under
    ``properties``): how many go off → on, on → off, stay; how their variants move.

    ``before`` and ``after`` are whole snapshots of the environment (the flags a
    dependency names included); each engine compiles only the flags it is asked about
    (the flag and its parents), once.
    """
    old_engine, new_engine = Engine(before), Engine(after)
    if _has_variants(before, flag) or _has_variants(after, flag):
        scored = _scored_with_variants(
            old_engine, new_engine, flag, environment, contexts, examples
        )
    else:
        scored = _scored_on_off(old_engine, new_engine, flag, environment, contexts, examples)
    new_flag = _flag(after, flag)
    changes = None if new_flag is None else rollout_changes(_flag(before, flag), new_flag)
    if not changes:
        return scored
    return attrs.evolve(scored, rollout_only=True, rollout_changes=changes)


def _flag(snapshot: ClientFeatures, name: str) -> Flag | None:
    return next((f for f in snapshot.features if f.name == name), None)


def _scored_on_off(
    old_engine: Engine,
    new_engine: Engine,
    flag: str,
    environment: str,
    contexts: Sequence[Mapping[str, Any]],
    examples: int,
) -> PreviewAnswer:
    old_on, new_on = old_engine.is_enabled, new_engine.is_enabled
    counts = [0, 0, 0, 0]  # index: 2 * before + after
    shown: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] = ([], [])
    for context in contexts:
        was, now = old_on(flag, context), new_on(flag, context)
        way = 2 * was + now
        counts[way] += 1
        if was != now:
            kept = shown[was]
            if len(kept) < examples:
                kept.append(context)
    return PreviewAnswer(
        flag,
        environment,
        len(contexts),
        PreviewFlips(counts[1], tuple(shown[0])),
        PreviewFlips(counts[2], tuple(shown[1])),
        counts[3],
        counts[0],
        (),
        False,
        (),
    )


def _scored_with_variants(
    old_engine: Engine,
    new_engine: Engine,
    flag: str,
    environment: str,
    contexts: Sequence[Mapping[str, Any]],
    examples: int,
) -> PreviewAnswer:
    old_variant, new_variant = old_engine.get_variant, new_engine.get_variant
    counts = [0, 0, 0, 0]
    shown: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] = ([], [])
    moves: Counter[tuple[str, str]] = Counter()
    move_examples: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for context in contexts:
        old, new = old_variant(flag, context), new_variant(flag, context)
        was, now = old.feature_enabled, new.feature_enabled
        counts[2 * was + now] += 1
        if was != now and len(shown[was]) < examples:
            shown[was].append(context)
        if old.name != new.name:
            key = (old.name, new.name)
            moves[key] += 1
            kept = move_examples.setdefault(key, [])
            if len(kept) < examples:
                kept.append(context)
    return PreviewAnswer(
        flag,
        environment,
        len(contexts),
        PreviewFlips(counts[1], tuple(shown[0])),
        PreviewFlips(counts[2], tuple(shown[1])),
        counts[3],
        counts[0],
        tuple(
            VariantMove(old, new, count, tuple(move_examples[(old, new)]))
            for (old, new), count in sorted(moves.items(), key=lambda item: (-item[1], item[0]))
        ),
        False,
        (),
    )


def rollout_changes(before: Flag | None, after: Flag) -> tuple[RolloutChange, ...] | None:
    """The rollout percentages a change moves, when that is all it changes; None when it
    changes anything else (the switch, variants, dependencies, a strategy's constraints,
    segments, group, stickiness, or which strategies there are) or nothing at all."""
    if before is None:
        return None
    old_rules = tuple(_rules_of(s) for s in before.strategies)
    new_rules = tuple(_rules_of(s) for s in after.strategies)
    if old_rules == new_rules or attrs.evolve(before, strategies=after.strategies) != after:
        return None
    if len(old_rules) != len(new_rules):
        return None
    changes = []
    for old, new, placed in zip(old_rules, new_rules, after.strategies, strict=True):
        if old == new:
            continue
        change = _rollout_change(old, attrs.evolve(new, id=placed.id), after.name)
        if change is None:
            return None
        changes.append(change)
    return tuple(changes)


def _rules_of(strategy: Strategy) -> Strategy:
    """What evaluation reads of a strategy: not its id, title or place in the list."""
    return attrs.evolve(strategy, id=None, title=None, sort_order=None)


def _percentage_key(name: str) -> str:
    return "rollout" if name == "flexibleRollout" else "percentage"


def _rollout_change(old: Strategy, new: Strategy, flag: str) -> RolloutChange | None:
    if old.name != new.name:
        return None
    key = _percentage_key(old.name)
    rest_old = {k: v for k, v in old.parameters.items() if k != key}
    rest_new = {k: v for k, v in new.parameters.items() if k != key}
    if rest_old != rest_new or attrs.evolve(old, parameters=new.parameters) != _rules_of(new):
        return None
    try:
        plan_old = rollout_plan(old.name, old.parameters, flag)
        plan_new = rollout_plan(new.name, new.parameters, flag)
    except BrokenRule:  # over 100%: the flag is off, not a rollout to state
        return None
    if plan_old is None or plan_new is None or plan_old.group_id is None:
        return None
    if plan_old.percentage is None or plan_new.percentage is None:
        return None
    return RolloutChange(
        new.id,
        new.name,
        plan_new.stickiness,
        plan_old.group_id,
        plan_old.percentage,
        plan_new.percentage,
        _statement(plan_old.percentage, plan_new.percentage, plan_new.stickiness, new),
    )


def _statement(before: int, after: int, stickiness: str, strategy: Strategy) -> str:
    """ "+40% of users by userId": who moves, and by what they are told apart."""
    delta = after - before
    words = _STICKINESS_WORDS.get(stickiness, stickiness)
    direction = "on" if delta > 0 else "off"
    text = f"{delta:+d}% of users by {words}: {before}% → {after}%, turned {direction}"
    if strategy.constraints or strategy.segments:
        text += ", among the contexts its constraints and segments let through"
    return text


@attrs.frozen
class ProposedChange:
    """What a change would set for a flag in one environment; None leaves it as it is.

    ``strategies`` replace the environment's whole list (in order; disabled ones are
    kept but, as for SDKs, never evaluated); ``variants`` the flag's variants there.
    """

    enabled: bool | None = None
    strategies: tuple[Strategy, ...] | None = None
    variants: tuple[Variant, ...] | None = None
