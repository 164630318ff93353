"""Row ↔ model mapping shared by the SQL stores: how each entity is kept in columns.

Times are ISO-8601 text in UTC (so they sort as text), JSON is text written by orjson,
booleans are whatever the dialect's boolean column gives back (read through ``bool``).
An action set keeps its columns plus a JSON ``body`` (m004); a run of one keeps the whole
action set and signal as they were, so its record does not change when they do.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson

from flagcore.entities import (
    Action,
    ActionKind,
    ActionSet,
    Signal,
)
from flagcore.model import Constraint
from flagcore.wire import (
    converter,
    structure_constraints,
)

MAX_COUNT = 2**63 - 1
"""The largest 64-bit integer: sums of metric counts stop there."""


def loads_list(text: str) -> Any:
    # Most flags have no dependencies and no flag-level variants: skip the parser for "[]".
    return [] if text == "[]" else orjson.loads(text)


def where(conditions: dict[str, Any]) -> tuple[str, list[Any]]:
    """``{"flag = ?": value, ...}`` → a WHERE clause over the conditions whose value is set."""
    kept = {sql: value for sql, value in conditions.items() if value is not None}
    return " AND ".join(kept) or "1 = 1", list(kept.values())


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def time_text(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.UTC).isoformat()


def parse_time(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


def required_time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def action_json(action: Action) -> dict[str, Any]:
    return {
        "kind": action.kind.value,
        "flag": action.flag,
        "environment": action.environment,
        "sortOrder": action.sort_order,
    }


def action_from(data: dict[str, Any]) -> Action:
    return Action(
        ActionKind(data["kind"]), data["flag"], data.get("environment"), data["sortOrder"]
    )


def action_set_body(action_set: ActionSet) -> dict[str, Any]:
    """What the ``body`` column holds (m004); the rest of an action set has columns."""
    return {
        "actions": [action_json(a) for a in action_set.actions],
        "filters": converter.unstructure(action_set.filters, tuple[Constraint, ...]),
        "enabled": action_set.enabled,
        "description": action_set.description,
        "actorId": action_set.actor_id,
    }


def action_set_json(action_set: ActionSet) -> dict[str, Any]:
    """The whole action set, as a run's record keeps it."""
    return {
        **action_set_body(action_set),
        "id": action_set.id,
        "name": action_set.name,
        "project": action_set.project,
        "source": action_set.source,
        "createdAt": time_text(action_set.created_at),
    }


def action_set_from(data: dict[str, Any]) -> ActionSet:
    return ActionSet(
        data["id"],
        data["name"],
        data["project"],
        data["source"],
        tuple(action_from(a) for a in data["actions"]),
        structure_constraints(data["filters"]),
        data["enabled"],
        data["description"],
        required_time(data["createdAt"]),
        data["actorId"],
    )


def signal_json(signal: Signal) -> dict[str, Any]:
    return {
        "id": signal.id,
        "endpointId": signal.endpoint_id,
        "tokenId": signal.token_id,
        "payload": signal.payload,
        "createdAt": time_text(signal.created_at),
    }


def signal_from(data: dict[str, Any]) -> Signal:
    return Signal(
        data["id"],
        data["endpointId"],
        data["tokenId"],
        data["payload"],
        required_time(data["createdAt"]),
    )


def action_set_from_row(row: Any) -> ActionSet:
    return action_set_from(
        {
            **orjson.loads(row["body"]),
            "id": row["id"],
            "name": row["name"],
            "project": row["project"],
            "source": row["source"],
            "createdAt": row["created_at"],
        }
    )
