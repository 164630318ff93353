"""What the client holds and reports as touched follows the one delta reader the engine
uses (`flagcore.wire.apply_delta_events`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flagcore import Engine
from flagcore_client.state import ClientState


def _flag(name: str, *, segments: tuple[int, ...] = (), enabled: bool = True) -> dict[str, Any]:
    strategy = {"name": "default", "parameters": {}, "constraints": [], "segments": [*segments]}
    return {"name": name, "enabled": enabled, "strategies": [strategy]}


def _segment(segment_id: int, value: str) -> dict[str, Any]:
    constraint = {"contextName": "country", "operator": "IN", "values": [value]}
    return {"id": segment_id, "name": f"s{segment_id}", "constraints": [constraint]}


def _held() -> ClientState:
    state = ClientState()
    payload = {
        "version": 2,
        "features": [_flag("a", segments=(1,)), _flag("b")],
        "segments": [_segment(1, "NO")],
    }
    assert state.replace(payload) == {"a", "b"}
    return state


def test_a_delta_touches_the_flags_it_changes_and_the_users_of_a_changed_segment() -> None:
    state = _held()
    touched = state.apply(
        {
            "events": [
                {"type": "feature-updated", "eventId": 2, "feature": _flag("b", enabled=False)},
                {"type": "segment-updated", "eventId": 2, "segment": _segment(1, "SE")},
            ]
        }
    )
    assert touched == {"a", "b"}
    assert state.features["b"]["enabled"] is False
    assert state.segments[1]["constraints"][0]["values"] == ["SE"]


def test_removing_a_flag_the_client_never_held_touches_nothing() -> None:
    state = _held()
    delta = {"events": [{"type": "feature-removed", "eventId": 3, "featureName": "zzz"}]}
    assert state.apply(delta) == set()
    removed = {"events": [{"type": "feature-removed", "eventId": 4, "featureName": "b"}]}
    assert state.apply(removed) == {"b"}
    assert set(state.features) == {"a"}


def test_a_hydration_touches_only_what_differs_and_the_backup_is_what_the_engine_reads(
    tmp_path: Path,
) -> None:
    state = _held()
    hydration = {
        "type": "hydration",
        "eventId": 5,
        "features": [_flag("a", segments=(1,)), _flag("c")],
        "segments": [_segment(1, "NO")],
    }
    assert state.apply({"events": [hydration]}) == {"b", "c"}
    backup = tmp_path / "backup.json"
    state.save(backup)
    engine = Engine.from_client_features(state.payload())
    assert engine.is_enabled("a", {"properties": {"country": "NO"}})
    assert not engine.is_enabled("a", {"properties": {"country": "SE"}})
    assert backup.read_text(encoding="utf-8").startswith('{"version":2,')
