"""The collector pause around bulk builds: it restores the collector, never leaves objects
frozen, never thaws what the application froze, and loses no garbage; engines and
services pause only when told they may."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from flagcore import Constraint, Engine, MemoryStore, Strategy
from flagcore.entities import FlagDefinition, FlagEnvironment, StrategyPlacement
from flagcore.gc_pause import gc_paused
from flagcore.service import Service
from flagcore.service.strategies import new_strategy_id
from flagcore.wire import unstructure_client_features


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


def _payload(flags: int) -> dict[str, object]:
    strategy = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "g"},
        "constraints": [
            {"contextName": "userId", "operator": "IN", "values": ["a", "b", "c"]},
            {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": "1.2.0"},
        ],
    }
    features = [
        {"name": f"flag-{index}", "enabled": True, "strategies": [strategy]}
        for index in range(flags)
    ]
    return {"version": 2, "features": features, "segments": []}


@contextmanager
def _collections() -> Iterator[list[int]]:
    """The generations the cyclic collector ran over while the block ran."""
    seen: list[int] = []
    gc.collect()  # so that the few allocations before a pause cannot start a collection

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _fill(store: MemoryStore, flags: int) -> None:
    with store.transaction() as tx:
        for index in range(flags):
            name = f"flag-{index:04d}"
            tx.save_flag(FlagDefinition(name, "default"))
            tx.save_flag_environment(FlagEnvironment(name, "development", enabled=True))
            strategy = Strategy(
                "flexibleRollout",
                {"rollout": "50", "stickiness": "userId", "groupId": name},
                (Constraint("userId", "IN", ("a", "b", "c")),),
                id=new_strategy_id(1_700_000_000_000 + index),
            )
            tx.save_strategy(StrategyPlacement(name, "development", strategy))
        tx.append_event("bulk-load", "test")


def test_a_bulk_compile_runs_no_collection_unless_the_engine_is_told_not_to_pause() -> None:
    payload = _payload(2_000)
    paused = Engine.from_client_features(payload)
    with _collections() as seen:
        paused.compile_all()
    assert seen == []  # 2,000 flags: promoted to the oldest generation, nothing left to collect
    running = Engine.from_client_features(payload, pause_gc=False)
    with _collections() as seen:
        running.compile_all()
    assert seen  # thousands of flags allocate far past the first generation's threshold
    assert running.is_enabled("flag-7", {"userId": "a"}) == paused.is_enabled(
        "flag-7", {"userId": "a"}
    )
    assert gc.isenabled()


def test_a_client_snapshot_defers_collections_unless_the_service_is_told_not_to_pause() -> None:
    counts = {}
    for pause_gc in (True, False):
        store = MemoryStore()
        service = Service(store, pause_gc=pause_gc)
        _fill(store, 2_000)
        with _collections() as seen:
            snapshot = service.client.client_features("development")
        assert len(snapshot.features) == 2_000
        live = service.client.engine("development")
        with _collections() as compiling:
            live.engine.compile_all()  # the live engine follows the service's choice
        counts[pause_gc] = (len(seen), len(compiling))
    # Paused: the young generation is collected once, when the pause ends; running: the
    # collector interrupts the snapshot and the compile again and again.
    assert max(counts[True]) <= 2, counts
    assert min(counts[False]) >= 8, counts
    assert gc.isenabled()


def test_a_pause_that_is_not_enabled_leaves_the_collector_running() -> None:
    with gc_paused(promote=True, enabled=False):
        assert gc.isenabled()
    assert gc.isenabled()


def test_writing_a_client_payload_defers_collections_unless_told_not_to_pause() -> None:
    store = MemoryStore()
    _fill(store, 2_000)
    snapshot = Service(store).client.client_features("development")
    counts = {}
    for pause_gc in (True, False):
        with _collections() as seen:
            payload = unstructure_client_features(snapshot, pause_gc=pause_gc)
        assert len(payload["features"]) == 2_000
        counts[pause_gc] = len(seen)
    assert counts[True] <= 1, counts  # one young collection when the pause ends, at most
    assert counts[False] >= 4, counts
    assert gc.isenabled()
