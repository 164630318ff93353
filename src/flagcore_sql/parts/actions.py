"""`flagcore.ports.ActionRepository`: action sets and their runs."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import orjson

from flagcore.entities import (
    ActionExecution,
    ActionOutcome,
    ActionSet,
    ActionState,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["ActionQueries"]


class ActionQueries(SqlPart):
    """The queries of `flagcore.ports.ActionRepository`."""

    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        action_set_id = self._insert(
            "INSERT INTO action_sets (name, project, source, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                mapping.dumps(mapping.action_set_body(action_set)),
                mapping.time_text(action_set.created_at),
            ],
        )
        return attrs.evolve(action_set, id=action_set_id)

    def get_action_set(self, action_set_id: int) -> ActionSet | None:
        row = self._one("SELECT * FROM action_sets WHERE id = ?", [action_set_id])
        return None if row is None else mapping.action_set_from_row(row)

    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]:
        where_sql, params = mapping.where({"project = ?": project, "source = ?": source})
        sql = f"SELECT * FROM action_sets WHERE {where_sql} ORDER BY id"
        return [mapping.action_set_from_row(row) for row in self._rows(sql, params)]

    def save_action_set(self, action_set: ActionSet) -> None:
        self._run(
            "UPDATE action_sets SET name = ?, project = ?, source = ?, body = ? WHERE id = ?",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                mapping.dumps(mapping.action_set_body(action_set)),
                action_set.id,
            ],
        )

    def delete_action_set(self, action_set_id: int) -> None:
        self._run("DELETE FROM action_sets WHERE id = ?", [action_set_id])

    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        body = {
            "actionSet": mapping.action_set_json(execution.action_set),
            "signal": mapping.signal_json(execution.signal),
            "outcomes": [
                {
                    "action": mapping.action_json(o.action),
                    "state": o.state.value,
                    "details": o.details,
                }
                for o in execution.outcomes
            ],
        }
        # The unique index on (action_set_id, signal_id) makes a second run a Conflict.
        execution_id = self._insert(
            "INSERT INTO action_set_events (action_set_id, signal_id, state, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                execution.action_set_id,
                execution.signal_id,
                execution.state.value,
                mapping.dumps(body),
                mapping.time_text(execution.created_at),
            ],
        )
        return attrs.evolve(execution, id=execution_id)

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        where_sql, params = mapping.where({"action_set_id = ?": action_set_id})
        rows = self._rows(
            f"SELECT * FROM action_set_events WHERE {where_sql} ORDER BY id DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        executions = []
        for row in rows:
            body = orjson.loads(row["body"])
            executions.append(
                ActionExecution(
                    row["id"],
                    mapping.action_set_from(body["actionSet"]),
                    mapping.signal_from(body["signal"]),
                    ActionState(row["state"]),
                    tuple(
                        ActionOutcome(
                            mapping.action_from(o["action"]), ActionState(o["state"]), o["details"]
                        )
                        for o in body["outcomes"]
                    ),
                    mapping.required_time(row["created_at"]),
                )
            )
        return executions
