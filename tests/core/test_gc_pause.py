"""The collector pause around bulk builds: it restores the collector, never leaves objects
frozen, never thaws what the application froze, and loses no garbage."""

from __future__ import annotations

import gc
import weakref

from flagcore.gc_pause import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: object = self


def test_a_promoting_pause_restores_the_collector_and_freezes_nothing() -> None:
    assert gc.isenabled()
    with gc_paused(promote=True):
        assert not gc.isenabled()
        built = [[index] for index in range(10_000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 100  # what was built is not waiting in the young generation
    assert len(built) == 10_000


def test_a_cycle_dropped_before_the_pause_is_still_collected() -> None:
    cycle = _Node()
    alive = weakref.ref(cycle)
    del cycle
    with gc_paused(promote=True):
        pass
    gc.collect()
    assert alive() is None


def test_objects_the_application_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with gc_paused(promote=True):
            [[index] for index in range(1_000)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_a_nested_pause_leaves_the_collector_to_the_outer_one() -> None:
    with gc_paused():
        with gc_paused(promote=True):
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
