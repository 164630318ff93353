"""Active flags: create, read, list, update, mark stale.

The archive (`flagcore.service.archive`) and dependencies
(`flagcore.service.dependencies`) are parts of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.entities import EnvironmentState, FlagDefinition, FlagDetails, Tag
from flagcore.errors import ErrorDetail, InvalidInput, NameConflict
from flagcore.model import FlagType, Strategy
from flagcore.ports import FlagRead, FlagWrite
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_project
from flagcore.service.tags import Tags, checked_tag, require_tag_type
from flagcore.validation import check_flag_value, check_name, check_text
from flagcore.wire.event_data import FlagData

__all__ = ["Flags", "flag_details"]

_FLAG_TYPES = tuple(t.value for t in FlagType)


def _check_type(flag_type: str) -> str:
    if flag_type not in _FLAG_TYPES:
        raise InvalidInput(
            f"type must be one of {', '.join(_FLAG_TYPES)}; got {flag_type!r}",
            [ErrorDetail(f"must be one of {', '.join(_FLAG_TYPES)}", "$.type")],
        )
    return flag_type


class Flags:
    """A flag's life while active; a flag created with tags is tagged by `Tags`."""

    def __init__(self, context: ServiceContext, *, tags: Tags) -> None:
        self._context = context
        self._tags = tags

    def create_flag(
        self,
        project: str,
        name: str,
        *,
        type: str = "release",
        description: str | None = None,
        impression_data: bool = False,
        tags: Sequence[Tag] = (),
        actor: Actor = SYSTEM,
    ) -> FlagDefinition:
        """Create a flag, with ``tags`` if given: all of it or, on any error, nothing.

        Every tag's type must exist already (Unleash 8.2 answers a missing one with a 500
        after rolling back; here it is `InvalidInput` naming the type, at ``$.tags[i].type``).
        """
        actor = authorize(actor, "create_flag", project=project)
        check_name(name, "flag")
        _check_type(type)
        check_text(description, "$.description")
        check_flag_value(impression_data, "$.impressionData")
        checked = [checked_tag(tag, f"$.tags[{index}]") for index, tag in enumerate(tags)]
        with self._context.unit() as tx:
            require_project(tx, project)
            for index, tag in enumerate(checked):
                require_tag_type(tx, tag, f"$.tags[{index}]")
            existing = tx.get_flag(name)
            if existing is not None:
                where = "an archived flag" if existing.archived else "a flag"
                raise NameConflict(f'{where} named "{name}" already exists')
            flag = FlagDefinition(
                name, project, type, description, False, impression_data, self._context.clock()
            )
            tx.save_flag(flag)
            self._context.record_event(
                tx, "feature-created", actor, flag=flag, data=FlagData.of(flag)
            )
            for tag in dict.fromkeys(checked):
                self._tags.tag_flag_in(tx, flag, tag, actor=actor)
        return flag

    def check_flag_name(self, name: str) -> None:
        """Raise unless ``name`` could be given to a new flag."""
        check_name(name, "flag")
        with self._context.read() as tx:
            existing = tx.get_flag(name)
        if existing is not None:
            where = "an archived flag" if existing.archived else "a flag"
            raise NameConflict(f'{where} named "{name}" already exists')

    def get_flag(self, project: str | None, name: str) -> FlagDetails:
        with self._context.read() as tx:
            flag = active_flag(tx, project, name)
            return flag_details(tx, flag)

    def list_flags(self, project: str | None = None) -> list[FlagDefinition]:
        """Active flags, of one project (which must exist: `NotFound` otherwise) or all."""
        with self._context.read() as tx:
            if project is not None:
                require_project(tx, project)
            return list(tx.list_flags(project=project, archived=False))

    def update_flag(
        self,
        project: str,
        name: str,
        *,
        type: str | None = None,
        description: str | None = None,
        impression_data: bool | None = None,
        stale: bool | None = None,
        actor: Actor = SYSTEM,
    ) -> FlagDefinition:
        actor = authorize(actor, "update_flag", project=project)
        if type is not None:
            _check_type(type)
        check_text(description, "$.description")
        check_flag_value(impression_data, "$.impressionData")
        check_flag_value(stale, "$.stale")
        with self._context.unit() as tx:
            return self.update_flag_in(
                tx,
                project,
                name,
                type=type,
                description=description,
                impression_data=impression_data,
                stale=stale,
                actor=actor,
            )

    def update_flag_in(
        self,
        tx: FlagWrite,
        project: str,
        name: str,
        *,
        type: str | None = None,
        description: str | None = None,
        impression_data: bool | None = None,
        stale: bool | None = None,
        actor: str,
    ) -> FlagDefinition:
        """`update_flag` inside a unit of work the caller holds (an action set marks a flag
        stale inside its run's transaction). An empty description is stored as null, as
        Unleash stores it."""
        before = active_flag(tx, project, name)
        after = attrs.evolve(
            before,
            type=before.type if type is None else type,
            description=before.description if description is None else (description or None),
            impression_data=(
                before.impression_data if impression_data is None else impression_data
            ),
            stale=before.stale if stale is None else stale,
        )
        return self._save_change(tx, before, after, actor)

    def replace_flag(
        self,
        project: str,
        name: str,
        *,
        type: str = "release",
        description: str | None = None,
        impression_data: bool = False,
        stale: bool = False,
        archived: bool = False,
        actor: Actor = SYSTEM,
    ) -> FlagDefinition:
        """Unleash's ``PUT`` of a flag: every setting takes the given value, and one left
        out its default (a stale flag updated without ``stale`` is no longer stale; no
        ``description``, or an empty one, clears it to null). `update_flag` changes only
        what it is given (``PATCH``). ``archived`` is in Unleash's body but may only be
        false here: archiving is its own use case (`Archive`, ``DELETE``)."""
        actor = authorize(actor, "replace_flag", project=project)
        if archived is not False:
            raise InvalidInput(
                "archive a flag with DELETE on its path, not with archived: true",
                [ErrorDetail("only false here; DELETE the flag to archive it", "$.archived")],
            )
        _check_type(type)
        check_text(description, "$.description")
        check_flag_value(impression_data, "$.impressionData")
        check_flag_value(stale, "$.stale")
        with self._context.unit() as tx:
            before = active_flag(tx, project, name)
            after = attrs.evolve(
                before,
                type=type,
                description=description or None,
                impression_data=impression_data,
                stale=stale,
            )
            return self._save_change(tx, before, after, actor)

    def _save_change(
        self, tx: FlagWrite, before: FlagDefinition, after: FlagDefinition, actor: str
    ) -> FlagDefinition:
        """Store ``after`` with the event Unleash records (stale on/off when only that
        changed), or nothing when nothing changed."""
        if after == before:
            return after
        tx.save_flag(after)
        kind = "feature-metadata-updated"
        if after.stale != before.stale and (attrs.evolve(after, stale=before.stale) == before):
            kind = "feature-stale-on" if after.stale else "feature-stale-off"
        self._context.record_event(
            tx, kind, actor, flag=after, data=FlagData.of(after), pre_data=FlagData.of(before)
        )
        return after

    def mark_stale(
        self, project: str, name: str, stale: bool = True, *, actor: Actor = SYSTEM
    ) -> FlagDefinition:
        actor = authorize(actor, "mark_stale", project=project)
        return self.update_flag(project, name, stale=stale, actor=actor)


def flag_details(tx: FlagRead, flag: FlagDefinition) -> FlagDetails:
    """The flag with every environment's state (on/off, strategies, variants) and its tags."""
    states = {state.environment: state for state in tx.list_flag_environments(flag=flag.name)}
    strategies: dict[str, list[Strategy]] = {}
    for placement in tx.list_strategies(flag=flag.name):
        strategies.setdefault(placement.environment, []).append(placement.strategy)
    environments = tuple(
        EnvironmentState(
            environment,
            states[environment.name].enabled if environment.name in states else False,
            tuple(strategies.get(environment.name, ())),
            states[environment.name].variants if environment.name in states else (),
        )
        for environment in tx.list_environments()
    )
    tags = tuple(tag for _name, tag in tx.list_flag_tags(flag.name))
    return FlagDetails(flag, environments, tags)
