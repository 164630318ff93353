"""The delta events the hub makes from two states of an environment, cut to a scope."""

from __future__ import annotations

from typing import Any

from flagcore import Engine
from flagcore.wire import write_answer
from flagcore_http.streaming_events import (
    ChangeBatch,
    EnvironmentState,
    EventHistory,
    FlagEntry,
    Scope,
    diff,
    parse_event_id,
)
from flagcore_http.streaming_events import scoped_events as scoped_values


def scoped_events(batches: list[ChangeBatch], scope: Scope) -> list[dict[str, Any]]:
    """The events as SDKs get them: written by their tables' writers."""
    return [write_answer(event) for event in scoped_values(batches, scope)]


def _flag(name: str, project: str, *, enabled: bool = True, segments: tuple[int, ...] = ()) -> Any:
    strategy: dict[str, Any] = {"name": "default", "parameters": {}, "constraints": []}
    if segments:
        strategy["segments"] = list(segments)
    json = {"name": name, "enabled": enabled, "project": project, "strategies": [strategy]}
    return name, FlagEntry(project, json, segments)


def _segment(segment_id: int, country: str) -> dict[str, Any]:
    return {
        "id": segment_id,
        "name": f"s{segment_id}",
        "constraints": [{"contextName": "country", "operator": "IN", "values": [country]}],
    }


def _state(revision: int, *flags: Any, segments: dict[int, Any] | None = None) -> EnvironmentState:
    return EnvironmentState(revision, dict(flags), segments or {})


def test_a_flag_moving_to_another_project_is_removed_for_the_old_scope_and_added_for_the_new() -> (
    None
):
    before = _state(1, _flag("checkout", "shop"))
    after = _state(2, _flag("checkout", "payments"))
    batch = diff(before, after)
    assert scoped_events([batch], Scope.of(["shop"])) == [
        {"type": "feature-removed", "eventId": 2, "featureName": "checkout", "project": "shop"}
    ]
    [added] = scoped_events([batch], Scope.of(["payments"]))
    assert (added["type"], added["feature"]["project"]) == ("feature-updated", "payments")
    assert scoped_events([batch], Scope.of(["elsewhere"])) == []
    assert [e["type"] for e in scoped_events([batch], Scope.of(["*"]))] == ["feature-updated"]


def test_a_flag_that_starts_using_an_unchanged_segment_brings_it_along() -> None:
    segments = {1: _segment(1, "NO")}
    before = _state(1, _flag("a", "p"), _flag("b", "q", segments=(1,)), segments=segments)
    after = _state(
        2, _flag("a", "p", segments=(1,)), _flag("b", "q", segments=(1,)), segments=segments
    )
    events = scoped_events([diff(before, after)], Scope.of(["p"]))
    assert [e["type"] for e in events] == ["segment-updated", "feature-updated"]
    hydration = write_answer(before.hydration(Scope.of(["p"])))
    engine = Engine.from_client_features({"events": [hydration]})
    engine.apply_delta({"events": events})
    assert engine.is_enabled("a", {"properties": {"country": "NO"}})
    assert not engine.is_enabled("a", {"properties": {"country": "SE"}})


def test_a_segment_change_reaches_only_scopes_whose_flags_use_it() -> None:
    before = _state(1, _flag("b", "q", segments=(1,)), segments={1: _segment(1, "NO")})
    after = _state(2, _flag("b", "q", segments=(1,)), segments={1: _segment(1, "SE")})
    batch = diff(before, after)
    assert scoped_events([batch], Scope.of(["p"])) == []
    assert [e["type"] for e in scoped_events([batch], Scope.of(["q"]))] == ["segment-updated"]


def test_catch_up_sends_each_flag_once_in_its_last_form_and_knows_its_limits() -> None:
    history = EventHistory(_state(10, _flag("a", "p")), capacity=2)
    history.advance(_state(11, _flag("a", "p", enabled=False)))
    history.advance(_state(12, _flag("a", "p", enabled=True)))
    events = [write_answer(e) for e in history.since(10, Scope.of(None))]
    assert [(e["type"], e["eventId"], e["feature"]["enabled"]) for e in events] == [
        ("feature-updated", 12, True)
    ]
    assert history.can_resume(10)
    assert not history.can_resume(13)  # from the future
    assert history.advance(_state(13, _flag("a", "p", enabled=True))) is None  # no change
    assert history.can_resume(13)
    history.advance(_state(14, _flag("a", "p", enabled=False)))
    assert not history.can_resume(10)  # its changes were let go: a hydration instead
    assert history.can_resume(11)


def test_event_ids_are_read_strictly() -> None:
    assert parse_event_id('"42"') == 42
    assert parse_event_id('W/"42"') == 42
    assert parse_event_id("42") == 42
    for garbage in (None, "", "-1", "1e3", "４２", "9" * 20, '"42', "0x2a"):
        assert parse_event_id(garbage) is None, garbage
