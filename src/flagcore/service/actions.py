"""Action sets: react to signals by switching flags, with every run recorded.

An action set listens to one signal endpoint. When a signal arrives and its payload passes
the set's filters (`flagcore.signal_matching`: paths into the payload, the engine's
operators), its actions run in ``sortOrder``, with the action set named as the actor; the
first failure stops the rest (Unleash's rule), which are recorded as ``not started``.

Running is split so that nothing a user wrote is evaluated while the store is held:
`action_sets_listening` reads, `flagcore.signal_matching.match_action_sets` decides
(pure, anywhere), and `execute_action_set` writes the flag changes, their events and the
run's record in one transaction. An action set runs at most once per signal: the store
refuses a second record for the same pair, and the whole transaction with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    ActionState,
    Signal,
)
from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    InvalidInput,
    NameConflict,
    NotFound,
)
from flagcore.limits import enforce
from flagcore.model import Constraint
from flagcore.ports import (
    ActionRepository,
    FlagLookups,
    ProjectRepository,
    SignalRepository,
    StrategyWrite,
)
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.environments import Environments
from flagcore.service.flags import Flags
from flagcore.service.lookups import require_project
from flagcore.signal_matching import MAX_FILTER_PATH_LENGTH, match_action_sets
from flagcore.validation import MAX_NAME_LENGTH, SORT_ORDER_MAX, check_constraints
from flagcore.wire.event_data import ActionSetCreatedData, IdNameData, NamedSwitchData

__all__ = ["ActionSets"]


class _ActionSets(ActionRepository, ProjectRepository, Protocol):
    """Action sets, in a project that must exist."""


class _ActionSetChecks(ActionRepository, SignalRepository, FlagLookups, Protocol):
    """What an action set names: its project, its signal endpoint, its flags and
    environments, and the project's other sets."""


class ActionSets:
    """Action sets and their runs; an action changes a flag through `Flags` (stale) or
    `Environments` (on, off), inside the run's own unit of work."""

    def __init__(
        self, context: ServiceContext, *, flags: Flags, environments: Environments
    ) -> None:
        self._context = context
        self._flags = flags
        self._environments = environments

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
        actor_id: int | None = None,
        actor: Actor = SYSTEM,
    ) -> ActionSet:
        actor = authorize(actor, "create_action_set", project=project)
        candidate = ActionSet(
            0,
            name,
            project,
            source,
            tuple(actions),
            tuple(filters),
            enabled,
            description,
            self._context.clock(),
            actor_id,
        )
        with self._context.unit() as tx:
            self._check_action_set(tx, candidate, exclude=None)
            created = tx.create_action_set(_in_order(candidate))
            self._context.record_event(
                tx,
                "actions-created",
                actor,
                project=project,
                data=ActionSetCreatedData(created.id, name, source),
            )
        return created

    def update_action_set(
        self, action_set_id: int, replacement: ActionSet, *, actor: Actor = SYSTEM
    ) -> ActionSet:
        """Replace an action set; it stays in its project (``replacement.project``)."""
        with self._context.unit() as tx:
            before = self._action_set(tx, action_set_id, replacement.project)
            actor = authorize(actor, "update_action_set", project=before.project)
            after = attrs.evolve(replacement, id=action_set_id, created_at=before.created_at)
            self._check_action_set(tx, after, exclude=action_set_id)
            after = _in_order(after)
            tx.save_action_set(after)
            self._context.record_event(
                tx,
                "actions-updated",
                actor,
                project=after.project,
                data=IdNameData(action_set_id, after.name),
            )
        return after

    def set_action_set_enabled(
        self,
        action_set_id: int,
        enabled: bool,
        *,
        project: str | None = None,
        actor: Actor = SYSTEM,
    ) -> ActionSet:
        """Unleash's ``POST …/actions/<id>/on`` and ``…/off``."""
        with self._context.unit() as tx:
            before = self._action_set(tx, action_set_id, project)
            actor = authorize(actor, "set_action_set_enabled", project=before.project)
            after = attrs.evolve(before, enabled=enabled)
            if after != before:
                tx.save_action_set(after)
                self._context.record_event(
                    tx,
                    "actions-updated",
                    actor,
                    project=after.project,
                    data=NamedSwitchData(action_set_id, after.name, enabled),
                )
        return after

    def delete_action_set(
        self, action_set_id: int, *, project: str | None = None, actor: Actor = SYSTEM
    ) -> None:
        with self._context.unit() as tx:
            action_set = self._action_set(tx, action_set_id, project)
            actor = authorize(actor, "delete_action_set", project=action_set.project)
            tx.delete_action_set(action_set_id)
            self._context.record_event(
                tx,
                "actions-deleted",
                actor,
                project=action_set.project,
                data=IdNameData(action_set_id, action_set.name),
            )

    def get_action_set(self, action_set_id: int, *, project: str | None = None) -> ActionSet:
        """The action set; with ``project``, only if it belongs to that project."""
        with self._context.read() as tx:
            return self._action_set(tx, action_set_id, project)

    def list_action_sets(self, project: str | None = None) -> list[ActionSet]:
        with self._context.read() as tx:
            if project is not None:
                require_project(tx, project)  # a typo must not look like an empty project
            return list(tx.list_action_sets(project=project))

    def list_action_executions(
        self,
        action_set_id: int | None = None,
        *,
        project: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[ActionExecution]:
        """The runs of an action set (Unleash's action set events), newest first."""
        with self._context.read() as tx:
            if action_set_id is not None:
                self._action_set(tx, action_set_id, project)
            return list(
                tx.list_action_executions(action_set_id=action_set_id, limit=limit, offset=offset)
            )

    def action_targets(self, project: str) -> tuple[list[str], list[str]]:
        """What an action of ``project`` may name: its active flags, and the environments."""
        with self._context.read() as tx:
            if tx.get_project(project) is None:
                raise NotFound(f'there is no project "{project}"')
            flags = [flag.name for flag in tx.list_flags(project=project)]
            environments = [environment.name for environment in tx.list_environments()]
        return flags, environments

    # --- running ---
    def action_sets_listening(self, source: int) -> list[ActionSet]:
        """The enabled action sets of signal endpoint ``source`` (a read; no user rule runs)."""
        with self._context.read() as tx:
            return [a for a in tx.list_action_sets(source=source) if a.enabled]

    def execute_action_set(
        self, matched: ActionSet, signal: Signal, *, filter_problem: str | None = None
    ) -> ActionExecution | None:
        """Run ``matched`` for ``signal``: its changes, their events and the record, at once.

        With ``filter_problem`` (its filters could not be evaluated on this signal) nothing
        runs and the record says why: a failed run, every action ``not started``.

        Returns None, doing nothing, when the action set already ran for this signal, or was
        deleted, disabled or edited after it matched (the edited set meets the next signal).
        """
        try:
            with self._context.unit() as tx:
                if tx.get_action_set(matched.id) != matched:
                    return None
                if filter_problem is None:
                    outcomes = self._run_actions(tx, matched)
                else:
                    outcomes = tuple(
                        ActionOutcome(action, ActionState.NOT_STARTED, filter_problem)
                        for action in matched.actions
                    )
                failed = filter_problem is not None or any(
                    o.state is ActionState.FAILED for o in outcomes
                )
                record = ActionExecution(
                    0,
                    matched,
                    signal,
                    ActionState.FAILED if failed else ActionState.SUCCESS,
                    outcomes,
                    self._context.clock(),
                )
                return tx.add_action_execution(record)
        except Conflict:
            return None  # it ran already (another worker, or a repeated call)

    def run_action_sets(self, signal: Signal) -> list[ActionExecution]:
        """Match and run every action set of the signal's endpoint, in this thread.

        For in-process callers; the HTTP server matches off its store thread instead. A set
        whose filters cannot be evaluated fails on its own (recorded); the others run.
        """
        candidates = self.action_sets_listening(signal.endpoint_id)
        verdicts = match_action_sets(candidates, signal.payload, source=signal.endpoint_id)
        runs = [
            self.execute_action_set(action_set, signal, filter_problem=problem)
            for action_set, problem in verdicts
        ]
        return [run for run in runs if run is not None]

    def _run_actions(self, tx: StrategyWrite, action_set: ActionSet) -> tuple[ActionOutcome, ...]:
        outcomes: list[ActionOutcome] = []
        stopped = False
        for action in action_set.actions:
            if stopped:
                outcomes.append(ActionOutcome(action, ActionState.NOT_STARTED))
                continue
            try:
                self._run_action(tx, action_set, action)
            except FlagcoreError as error:
                # Every check comes before the action's first write, so a failed action
                # changed nothing; the ones before it stand, as in Unleash.
                outcomes.append(ActionOutcome(action, ActionState.FAILED, error.message))
                stopped = True
                continue
            outcomes.append(ActionOutcome(action, ActionState.SUCCESS))
        return tuple(outcomes)

    def _run_action(self, tx: StrategyWrite, action_set: ActionSet, action: Action) -> None:
        actor = action_set.actor
        if action.kind is ActionKind.MARK_FEATURE_STALE:
            self._flags.update_flag_in(tx, action_set.project, action.flag, stale=True, actor=actor)
            return
        self._environments.set_environment_enabled_in(
            tx,
            action_set.project,
            action.flag,
            action.environment or "",
            action.kind is ActionKind.TOGGLE_FEATURE_ON,
            actor=actor,
        )

    # --- shared ---
    @staticmethod
    def _action_set(tx: _ActionSets, action_set_id: int, project: str | None = None) -> ActionSet:
        """The action set, which must be in ``project`` when one is given."""
        if project is not None:
            require_project(tx, project)
        action_set = tx.get_action_set(action_set_id)
        if action_set is None:
            raise NotFound(f"there is no action set with id {action_set_id}")
        if project is not None and action_set.project != project:
            raise NotFound(f"there is no action set {action_set_id} in this project")
        return action_set

    def _check_action_set(
        self, tx: _ActionSetChecks, action_set: ActionSet, exclude: int | None
    ) -> None:
        limits = self._context.limits
        name = action_set.name
        if not name or not name.strip():
            raise InvalidInput(
                "an action set needs a name", [ErrorDetail("must not be empty", "$.name")]
            )
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidInput(
                f"an action set name has at most {MAX_NAME_LENGTH} characters",
                [ErrorDetail(f"at most {MAX_NAME_LENGTH} characters", "$.name")],
            )
        if action_set.actor_id is not None and action_set.actor_id < 1:
            raise InvalidInput(
                "actorId is a positive integer", [ErrorDetail("at least 1", "$.actorId")]
            )
        if tx.get_project(action_set.project) is None:
            raise NotFound(f'there is no project "{action_set.project}"')
        if tx.get_signal_endpoint(action_set.source) is None:
            raise NotFound(
                f"there is no signal endpoint with id {action_set.source}",
                [ErrorDetail("unknown signal endpoint", "$.match.sourceId")],
            )
        others = [a for a in tx.list_action_sets(project=action_set.project) if a.id != exclude]
        if any(other.name == name for other in others):
            # The event log names an action set by its name, so it must say which one.
            raise NameConflict(f'project "{action_set.project}" has an action set named "{name}"')
        enforce(limits, "action_sets_per_project", len(others) + 1, "action sets in one project")
        self._check_filters(action_set.filters)
        self._check_actions(tx, action_set)

    def _check_filters(self, filters: Sequence[Constraint]) -> None:
        limits = self._context.limits
        enforce(
            limits,
            "filters_per_action_set",
            len(filters),
            "filters on one action set",
            "$.match.payload",
        )
        seen: set[str] = set()
        for constraint in filters:
            path = constraint.context_name
            where = f"$.match.payload[{path!r}]"
            if not path or len(path) > MAX_FILTER_PATH_LENGTH or path in seen:
                raise InvalidInput(
                    f"a payload filter's key is a path of 1 to {MAX_FILTER_PATH_LENGTH} "
                    "characters, once per action set",
                    [ErrorDetail("empty, too long or repeated", where)],
                )
            seen.add(path)
            enforce(
                limits,
                "values_per_action_filter",
                len(constraint.values),
                "values in one action filter",
                f"{where}.values",
            )
            try:
                check_constraints((constraint,), limits, "$")
            except InvalidInput as refused:
                details = [
                    attrs.evolve(d, path=(d.path or "").replace("$[0]", where, 1))
                    for d in refused.details
                ]
                raise InvalidInput(refused.message, details) from None

    def _check_actions(self, tx: FlagLookups, action_set: ActionSet) -> None:
        if not action_set.actions:
            raise InvalidInput(
                "an action set needs at least one action", [ErrorDetail("empty", "$.actions")]
            )
        enforce(
            self._context.limits,
            "actions_per_action_set",
            len(action_set.actions),
            "actions in one action set",
            "$.actions",
        )
        for index, action in enumerate(action_set.actions):
            here = f"$.actions[{index}]"
            if not 1 <= action.sort_order <= SORT_ORDER_MAX:
                raise InvalidInput(
                    f"sortOrder is a whole number from 1 to {SORT_ORDER_MAX}",
                    [ErrorDetail(f"from 1 to {SORT_ORDER_MAX}", f"{here}.sortOrder")],
                )
            flag = tx.get_flag(action.flag)
            if flag is None or flag.project != action_set.project:
                raise NotFound(
                    f'there is no flag "{action.flag}" in project "{action_set.project}"',
                    [ErrorDetail("unknown flag", f"{here}.executionParams.featureName")],
                )
            if action.kind.needs_environment and (
                action.environment is None or tx.get_environment(action.environment) is None
            ):
                raise InvalidInput(
                    f"{action.kind.value} needs an existing environment",
                    [ErrorDetail("unknown environment", f"{here}.executionParams.environment")],
                )


def _in_order(action_set: ActionSet) -> ActionSet:
    """Its actions by ``sort_order``, the order they run in; equal ones keep their order."""
    ordered = tuple(sorted(action_set.actions, key=lambda action: action.sort_order))
    return attrs.evolve(action_set, actions=ordered)
