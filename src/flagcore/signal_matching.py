"""Does a signal's payload pass an action set's filters? Pure, bounded, and the engine's rules.

Unleash reads a payload filter's key as a path into the signal's JSON, flattened the way
its ``flattenPayload`` does: objects join keys with ``.``, list items get ``[index]``
(``data.service``, ``tags[0]``, ``alerts[1].severity``), and a literal key that spells the
same path as a nested one is read after it, so it wins. Each filter is then an engine
constraint over that field (`flagcore.operators`), so every operator behaves as in flag
evaluation and ``REGEX`` is whatever the engine's operator builder compiles (linear-time
once the engine uses RE2, with nothing to change here).

The payload comes from outside, so the walk is bounded: it only descends into keys that
start some filter's path (a path can only grow), so its cost is the size of the payload
at most, never the sum of every leaf's path length. Only an object payload has fields.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from flagcore.entities import ActionSet
from flagcore.model import Constraint
from flagcore.operators import BrokenRule, Predicate, compile_constraint, never

__all__ = [
    "MAX_FILTER_PATH_LENGTH",
    "FilterVerdict",
    "match_action_sets",
    "matching_action_sets",
    "payload_fields",
]

MAX_FILTER_PATH_LENGTH = 255


def payload_fields(payload: Any, paths: Collection[str]) -> dict[str, Any]:
    """The leaves of ``payload`` at ``paths`` (flattened as Unleash does), where present."""
    if not isinstance(payload, Mapping) or not paths:
        return {}
    wanted = frozenset(paths)
    prefixes = frozenset(path[:end] for path in wanted for end in range(1, len(path) + 1))
    found: dict[str, Any] = {}
    # Depth first, in document order, as Unleash's recursion assigns (so later keys win).
    stack: list[tuple[str, Any, bool]] = [("", payload, False)]
    while stack:
        prefix, value, is_leaf = stack.pop()
        if is_leaf:
            found[prefix] = value
            continue
        children: list[tuple[str, Any, bool]] = []
        entries: Iterable[tuple[Any, Any]] = (
            value.items() if isinstance(value, Mapping) else enumerate(value)
        )
        for key, child in entries:
            path = f"{prefix}.{key}" if prefix else str(key)
            if path not in prefixes:
                continue
            if isinstance(child, Mapping):
                children.append((path, child, False))
            elif isinstance(child, list):
                for index, item in enumerate(child):
                    item_path = f"{path}[{index}]"
                    if isinstance(item, (Mapping, list)):
                        if item_path in prefixes:
                            children.append((item_path, item, False))
                    elif item_path in wanted:
                        children.append((item_path, item, True))
            elif path in wanted:
                children.append((path, child, True))
        stack.extend(reversed(children))
    return found


@functools.lru_cache(maxsize=1024)
def _predicates(filters: tuple[Constraint, ...]) -> tuple[Predicate, ...]:
    """Filters prepared once per distinct list (a regex compiles once, not per signal)."""
    try:
        return tuple(compile_constraint(constraint) for constraint in filters)
    except BrokenRule:  # refused when saved; a stored one that breaks matches nothing
        return (never,)


def passes(action_set: ActionSet, fields: Mapping[str, Any]) -> bool:
    """Every filter holds for the payload's ``fields`` (no filters: every signal passes)."""
    context = {"properties": fields}
    return all(predicate(context) for predicate in _predicates(action_set.filters))


FilterVerdict = tuple[ActionSet, "str | None"]
"""An action set the signal concerns, and None (its filters pass) or why they could not
be evaluated (the set then fails, and its execution log says why)."""


def match_action_sets(
    action_sets: Sequence[ActionSet], payload: Any, *, source: int
) -> list[FilterVerdict]:
    """The enabled action sets listening to ``source`` whose filters the payload passes,
    or cannot be evaluated on: each set is judged on its own, so one set's failure never
    keeps the others from running."""
    listening = [a for a in action_sets if a.enabled and a.source == source]
    paths = {constraint.context_name for a in listening for constraint in a.filters}
    fields = payload_fields(payload, paths)
    verdicts: list[FilterVerdict] = []
    for action_set in listening:
        try:
            if passes(action_set, fields):
                verdicts.append((action_set, None))
        except Exception as error:  # a bug must stop this set only, and be seen in its log
            verdicts.append((action_set, f"its filters could not be evaluated: {error!r}"))
    return verdicts


def matching_action_sets(
    action_sets: Sequence[ActionSet], payload: Any, *, source: int
) -> list[ActionSet]:
    """The enabled action sets listening to ``source`` whose filters the payload passes."""
    verdicts = match_action_sets(action_sets, payload, source=source)
    return [action_set for action_set, problem in verdicts if problem is None]
