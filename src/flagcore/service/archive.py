"""The archive: archive a flag, list archived flags, revive one, delete one for good."""

from __future__ import annotations

import attrs

from flagcore.entities import FlagDefinition, FlagDetails
from flagcore.errors import Conflict, NotFound
from flagcore.ports import FlagRepository, FlagWrite
from flagcore.service.change_request_gate import refuse_flag_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.flags import flag_details
from flagcore.service.lookups import active_flag, require_project
from flagcore.wire.event_data import FlagData

__all__ = ["Archive"]


class Archive:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def archive_flag(self, project: str, name: str, *, actor: Actor = SYSTEM) -> FlagDefinition:
        who = authorize(actor, "archive_flag", project=project)
        with self._context.unit() as tx:
            refuse_flag_change(tx, actor, project)
            return self.archive_flag_in(tx, project, name, actor=who)

    def archive_flag_in(
        self, tx: FlagWrite, project: str, name: str, *, actor: str
    ) -> FlagDefinition:
        """`archive_flag` inside the caller's unit of work (a change request applied)."""
        flag = active_flag(tx, project, name)
        archived = attrs.evolve(flag, archived_at=self._context.clock())
        tx.save_flag(archived)
        self._context.record_event(tx, "feature-archived", actor, flag=archived)
        return archived

    def list_archived_flags(self, project: str | None = None) -> list[FlagDetails]:
        """Archived flags, of one project (which must exist: `NotFound` otherwise) or all."""
        with self._context.read() as tx:
            if project is not None:
                require_project(tx, project)
            return [
                flag_details(tx, flag) for flag in tx.list_flags(project=project, archived=True)
            ]

    def revive_flag(self, name: str, *, actor: Actor = SYSTEM) -> FlagDefinition:
        """Back from the archive with its strategies, but off in every environment."""
        with self._context.unit() as tx:
            flag = _archived_flag(tx, name)
            actor = authorize(actor, "revive_flag", project=flag.project)
            if tx.get_project(flag.project) is None:
                raise Conflict(
                    f'cannot revive "{name}": its project "{flag.project}" no longer exists'
                )
            revived = attrs.evolve(flag, archived_at=None)
            tx.save_flag(revived)
            for state in tx.list_flag_environments(flag=name):
                if state.enabled:
                    tx.save_flag_environment(attrs.evolve(state, enabled=False))
            self._context.record_event(tx, "feature-revived", actor, flag=revived)
        return revived

    def delete_flag(self, name: str, *, actor: Actor = SYSTEM) -> None:
        """Delete an archived flag for good; an active flag must be archived first."""
        with self._context.unit() as tx:
            flag = _archived_flag(tx, name)
            actor = authorize(actor, "delete_flag", project=flag.project)
            tx.delete_flag(name)
            self._context.record_event(
                tx, "feature-deleted", actor, flag=flag, pre_data=FlagData.of(flag)
            )


def _archived_flag(tx: FlagRepository, name: str) -> FlagDefinition:
    flag = tx.get_flag(name)
    if flag is None:
        raise NotFound(f'there is no flag named "{name}"')
    if not flag.archived:
        raise Conflict(f'flag "{name}" is not archived; archive it first')
    return flag
