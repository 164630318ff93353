"""The preview's context sample: a bounded reservoir per environment, deny-listed fields
never kept, a context kept as one canonical text."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter

from flagcore.context_sample import (
    MAX_ENVIRONMENTS,
    ContextSampler,
    Reservoir,
    context_text,
    without_denied,
)

NOW = dt.datetime(2026, 11, 25, 8, 0, tzinfo=dt.UTC)


def _sampler(size: int) -> ContextSampler:
    return ContextSampler(enabled=True, size=size, denied=("email",), clock=lambda: NOW)


def test_the_first_contexts_fill_the_slots_then_each_keeps_a_fair_chance() -> None:
    kept: Counter[int] = Counter()
    for seed in range(300):
        reservoir = Reservoir(10, draw=random.Random(seed))
        final: dict[int, str] = {}
        for i in range(100):
            slot = reservoir.slot_for(NOW)
            if i < 10:
                assert slot == i
            if slot is not None:
                final[slot] = str(i)
        kept.update(int(i) // 10 for i in final.values())
    # Each tenth of the stream ends up with about a tenth of the 3,000 kept slots.
    assert all(200 < kept[decile] < 400 for decile in range(10)), kept


def test_a_new_window_starts_the_count_again_so_new_traffic_takes_the_slots() -> None:
    reservoir = Reservoir(3, window=dt.timedelta(hours=1), draw=random.Random(1))
    for _ in range(1000):
        reservoir.slot_for(NOW)
    later = NOW + dt.timedelta(hours=1)
    assert [reservoir.slot_for(later) for _ in range(3)] == [0, 1, 2]


def test_deny_listed_names_are_dropped_at_the_top_level_and_among_properties() -> None:
    context = {"userId": "u", "email": "a@b.c", "properties": {"email": "x", "plan": "pro"}}
    kept, dropped = without_denied(context, {"email"})
    assert kept == {"userId": "u", "properties": {"plan": "pro"}}
    assert dropped == ("email", "email")
    only_denied = without_denied({"properties": {"email": "x"}}, {"email"})[0]
    assert only_denied == {}


def test_equal_contexts_are_kept_as_the_same_text() -> None:
    one = context_text({"userId": "u", "properties": {"b": "1", "a": "2"}})
    other = context_text({"properties": {"a": "2", "b": "1"}, "userId": "u"})
    assert one == other
    assert json.loads(one) == {"userId": "u", "properties": {"a": "2", "b": "1"}}


def test_the_sampler_keeps_at_most_its_size_per_environment_without_denied_fields() -> None:
    sampler = _sampler(size=5)
    for i in range(100):
        sampler.offer("production", {"userId": f"u{i}", "email": f"u{i}@x.io"})
    taken = sampler.take()
    assert list(taken) == ["production"]
    assert sorted(taken["production"]) == [0, 1, 2, 3, 4]
    assert all("email" not in text for text, _at in taken["production"].values())
    assert sampler.take() == {}
    assert sampler.pending_bytes == 0


def test_a_sampler_turned_off_keeps_nothing() -> None:
    sampler = ContextSampler(enabled=False, size=5, denied=())
    sampler.offer("production", {"userId": "u"})
    assert sampler.take() == {}


def test_environments_past_the_bound_are_not_sampled() -> None:
    sampler = _sampler(size=1)
    for i in range(MAX_ENVIRONMENTS + 10):
        sampler.offer(f"env-{i}", {"userId": "u"})
    assert len(sampler.take()) == MAX_ENVIRONMENTS


def test_a_context_too_long_to_keep_is_skipped_and_counted() -> None:
    sampler = _sampler(size=5)
    sampler.offer("production", {"userId": "u" * 9000})
    assert sampler.take() == {}
    assert sampler.skipped == 1
