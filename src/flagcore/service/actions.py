"""Action sets: react to signals by switching flags, with every run recorded.

An action set listens to one signal endpoint. When a signal arrives and its payload
passes the set's filters (constraints over ``payload.<path>``, with the engine's
operators), its actions run in order, each as its own use case with the action set as
actor; the first failure stops the rest. The run and each action's outcome are stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flagcore.context import Context
from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    Signal,
)
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.limits import enforce
from flagcore.model import Constraint
from flagcore.operators import compile_constraint
from flagcore.ports import Transaction
from flagcore.service._base import SYSTEM, ServiceBase
from flagcore.validation import check_constraints

__all__ = ["ActionsMixin", "payload_context"]


def payload_context(payload: Any) -> Context:
    """The payload as a context whose properties are its leaves: ``payload.a.b`` → value."""
    flat: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif not isinstance(value, list):
            flat[path] = value

    walk(payload, "payload")
    return Context(properties=flat)


class ActionsMixin(ServiceBase):
    def create_action_set(
        self,
        name: str,
        project: str,
        source: int,
        actions: Sequence[Action],
        *,
        filters: Sequence[Constraint] = (),
        enabled: bool = True,
        description: str | None = None,
        actor: str = SYSTEM,
    ) -> ActionSet:
        candidate = ActionSet(
            0,
            name,
            project,
            source,
            tuple(actions),
            tuple(filters),
            enabled,
            description,
            self.clock(),
        )
        with self._unit() as tx:
            self._check_action_set(tx, candidate, exclude=None)
            created = tx.create_action_set(candidate)
            self._event(
                tx,
                "actions-created",
                actor,
                project=project,
                data={"id": created.id, "name": name, "source": source},
            )
        return created

    def update_action_set(
        self, action_set_id: int, replacement: ActionSet, *, actor: str = SYSTEM
    ) -> ActionSet:
        """Replace an action set; it stays in its project (``replacement.project``)."""
        with self._unit() as tx:
            before = self._action_set(tx, action_set_id, replacement.project)
            after = attrs.evolve(replacement, id=action_set_id, created_at=before.created_at)
            self._check_action_set(tx, after, exclude=action_set_id)
            tx.save_action_set(after)
            self._event(
                tx,
                "actions-updated",
                actor,
                project=after.project,
                data={"id": action_set_id, "name": after.name},
            )
        return after

    def delete_action_set(
        self, action_set_id: int, *, project: str | None = None, actor: str = SYSTEM
    ) -> None:
        with self._unit() as tx:
            action_set = self._action_set(tx, action_set_id, project)
            tx.delete_action_set(action_set_id)
            self._event(
                tx,
                "actions-deleted",
                actor,
                project=action_set.project,
                data={"id": action_set_id, "name": action_set.name},
            )

    def get_action_set(self, action_set_id: int, *, project: str | None = None) -> ActionSet:
        """The action set; with ``project``, only if it belongs to that project."""
        with self._read() as tx:
            return self._action_set(tx, action_set_id, project)

    def list_action_sets(self, project: str | None = None) -> list[ActionSet]:
        with self._read() as tx:
            return list(tx.list_action_sets(project=project))

    def list_action_executions(
        self, action_set_id: int | None = None, *, project: str | None = None, limit: int = 50
    ) -> list[ActionExecution]:
        with self._read() as tx:
            if action_set_id is not None:
                self._action_set(tx, action_set_id, project)
            return list(tx.list_action_executions(action_set_id=action_set_id, limit=limit))

    def run_action_sets(self, signal: Signal) -> list[ActionExecution]:
        """Run every enabled action set of the signal's endpoint whose filters pass."""
        with self._read() as tx:
            candidates = [a for a in tx.list_action_sets(source=signal.endpoint_id) if a.enabled]
        context = payload_context(signal.payload)
        executions = []
        for action_set in candidates:
            filters = [compile_constraint(c) for c in action_set.filters]
            if all(check(context) for check in filters):
                executions.append(self._execute(action_set, signal))
        return executions

    def _execute(self, action_set: ActionSet, signal: Signal) -> ActionExecution:
        actor = f"action-set:{action_set.name}"
        outcomes: list[ActionOutcome] = []
        for action in action_set.actions:
            try:
                if action.kind is ActionKind.MARK_STALE:
                    self.mark_stale(action_set.project, action.flag, True, actor=actor)  # type: ignore[attr-defined]
                else:
                    self.set_environment_enabled(  # type: ignore[attr-defined]
                        action_set.project,
                        action.flag,
                        action.environment or "",
                        action.kind is ActionKind.ENABLE_FLAG,
                        actor=actor,
                    )
            except FlagcoreError as error:
                outcomes.append(ActionOutcome(action, False, error.message))
                break  # a failed action stops the ones after it
            outcomes.append(ActionOutcome(action, True))
        ok = all(o.ok for o in outcomes)  # a failure is the last outcome
        with self._unit() as tx:
            return tx.add_action_execution(
                ActionExecution(0, action_set.id, signal.id, ok, tuple(outcomes), self.clock())
            )

    # --- shared ---
    @staticmethod
    def _action_set(tx: Transaction, action_set_id: int, project: str | None = None) -> ActionSet:
        """The action set, which must be in ``project`` when one is given."""
        action_set = tx.get_action_set(action_set_id)
        if action_set is None:
            raise NotFound(f"there is no action set with id {action_set_id}")
        if project is not None and action_set.project != project:
            raise NotFound(f"there is no action set {action_set_id} in this project")
        return action_set

    def _check_action_set(
        self, tx: Transaction, action_set: ActionSet, exclude: int | None
    ) -> None:
        limits = self.limits
        if not action_set.name or not action_set.name.strip():
            raise InvalidInput(
                "an action set needs a name", [ErrorDetail("must not be empty", "$.name")]
            )
        if tx.get_project(action_set.project) is None:
            raise NotFound(f'there is no project "{action_set.project}"')
        if tx.get_signal_endpoint(action_set.source) is None:
            raise NotFound(f"there is no signal endpoint with id {action_set.source}")
        others = [a for a in tx.list_action_sets(project=action_set.project) if a.id != exclude]
        enforce(limits, "action_sets_per_project", len(others) + 1, "action sets in one project")
        enforce(
            limits, "filters_per_action_set", len(action_set.filters), "filters on one action set"
        )
        for constraint in action_set.filters:
            enforce(
                limits,
                "values_per_action_filter",
                len(constraint.values),
                "values in one action filter",
            )
        check_constraints(action_set.filters, limits, "$.filters")
        if not action_set.actions:
            raise InvalidInput(
                "an action set needs at least one action", [ErrorDetail("empty", "$.actions")]
            )
        enforce(
            limits, "actions_per_action_set", len(action_set.actions), "actions in one action set"
        )
        for index, action in enumerate(action_set.actions):
            flag = tx.get_flag(action.flag)
            if flag is None or flag.project != action_set.project:
                raise NotFound(
                    f'there is no flag "{action.flag}" in project "{action_set.project}"',
                    [ErrorDetail("unknown flag", f"$.actions[{index}].featureName")],
                )
            needs_environment = action.kind is not ActionKind.MARK_STALE
            if needs_environment and (
                action.environment is None or tx.get_environment(action.environment) is None
            ):
                raise InvalidInput(
                    f"action {index} needs an existing environment",
                    [ErrorDetail("unknown environment", f"$.actions[{index}].environment")],
                )
