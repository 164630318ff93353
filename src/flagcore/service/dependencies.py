"""Dependencies between flags: a child flag is on only when its parents are."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.entities import FlagDefinition
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Dependency
from flagcore.ports import FlagWrite
from flagcore.service.change_request_gate import refuse_flag_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag
from flagcore.tables import FLAGS, IS_NULL
from flagcore.wire.event_data import DependencyNamesData

__all__ = ["Dependencies"]


class Dependencies:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def parent_candidates(self, project: str, name: str, *, limit: int) -> list[str] | None:
        """The names of ``project``'s other active flags, for a form to offer as parents
        (the project's flags in creation order), or None when there are more than
        ``limit``: read with a bound, so a project of thousands costs no more."""
        with self._context.read() as tx:
            where = {"project": project, "archived_at": IS_NULL}
            flags = tx.list_records(FLAGS, where, limit=limit + 2)
        names = [f.name for f in flags if f.name != name]
        return names if len(names) <= limit else None

    def set_dependencies(
        self, project: str, name: str, dependencies: Sequence[Dependency], *, actor: Actor = SYSTEM
    ) -> FlagDefinition:
        """Replace the flag's parents: one level only, so a parent may not have parents."""
        who = authorize(actor, "set_dependencies", project=project)
        with self._context.unit() as tx:
            refuse_flag_change(tx, actor, project)
            return self.set_dependencies_in(tx, project, name, dependencies, actor=who)

    def set_dependencies_in(
        self,
        tx: FlagWrite,
        project: str,
        name: str,
        dependencies: Sequence[Dependency],
        *,
        actor: str,
    ) -> FlagDefinition:
        """`set_dependencies` inside the caller's unit of work (a change request applied)."""
        before = active_flag(tx, project, name)
        for index, dependency in enumerate(dependencies):
            parent = tx.get_flag(dependency.feature)
            path = f"$[{index}].feature"
            if parent is None or parent.archived or dependency.feature == name:
                raise InvalidInput(
                    f'"{dependency.feature}" is not an active flag that "{name}" can depend on',
                    [ErrorDetail("not an active flag", path)],
                )
            if parent.project != before.project:
                raise InvalidInput(
                    "a flag can only depend on flags of its own project",
                    [ErrorDetail("in another project", path)],
                )
            if parent.dependencies:
                raise InvalidInput(
                    f'"{dependency.feature}" depends on other flags itself; '
                    "dependencies are one level deep",
                    [ErrorDetail("the parent has parents", path)],
                )
        is_parent = any(
            dep.feature == name for other in tx.list_flags() for dep in other.dependencies
        )
        if dependencies and is_parent:
            raise InvalidInput(
                f'other flags depend on "{name}"; dependencies are one level deep',
                [ErrorDetail("this flag is a parent", "$")],
            )
        after = attrs.evolve(before, dependencies=tuple(dependencies))
        tx.save_flag(after)
        self._context.record_event(
            tx,
            "feature-dependencies-updated",
            actor,
            flag=after,
            data=DependencyNamesData(tuple(d.feature for d in after.dependencies)),
        )
        return after
