"""Flags: create, read, update, stale, and the archive (archive, revive, delete for good)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.entities import EnvironmentState, FlagDefinition, FlagDetails, Tag
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.model import Dependency, FlagType, Strategy
from flagcore.ports import Transaction
from flagcore.service._base import SYSTEM, ServiceBase
from flagcore.service.projects import require_project
from flagcore.service.tags import checked_tag, require_tag_type, tag_flag
from flagcore.validation import check_name

__all__ = ["FlagsMixin"]

_FLAG_TYPES = tuple(t.value for t in FlagType)


def _check_type(flag_type: str) -> str:
    if flag_type not in _FLAG_TYPES:
        raise InvalidInput(
            f"type must be one of {', '.join(_FLAG_TYPES)}; got {flag_type!r}",
            [ErrorDetail(f"must be one of {', '.join(_FLAG_TYPES)}", "$.type")],
        )
    return flag_type


def flag_data(flag: FlagDefinition) -> dict[str, object]:
    return {
        "name": flag.name,
        "project": flag.project,
        "type": flag.type,
        "description": flag.description,
        "stale": flag.stale,
        "impressionData": flag.impression_data,
    }


class FlagsMixin(ServiceBase):
    def create_flag(
        self,
        project: str,
        name: str,
        *,
        type: str = "release",
        description: str | None = None,
        impression_data: bool = False,
        tags: Sequence[Tag] = (),
        actor: str = SYSTEM,
    ) -> FlagDefinition:
        """Create a flag, with ``tags`` if given: all of it or, on any error, nothing.

        Every tag's type must exist already (Unleash 8.2 answers a missing one with a 500
        after rolling back; here it is `InvalidInput` naming the type, at ``$.tags[i].type``).
        """
        check_name(name, "flag")
        _check_type(type)
        checked = [checked_tag(tag, f"$.tags[{index}]") for index, tag in enumerate(tags)]
        with self._unit() as tx:
            require_project(tx, project)
            for index, tag in enumerate(checked):
                require_tag_type(tx, tag, f"$.tags[{index}]")
            existing = tx.get_flag(name)
            if existing is not None:
                where = "an archived flag" if existing.archived else "a flag"
                raise NameConflict(f'{where} named "{name}" already exists')
            flag = FlagDefinition(
                name, project, type, description, False, impression_data, self.clock()
            )
            tx.save_flag(flag)
            self._event(tx, "feature-created", actor, flag=flag, data=flag_data(flag))
            for tag in dict.fromkeys(checked):
                tag_flag(tx, flag, tag, actor)
        return flag

    def check_flag_name(self, name: str) -> None:
        """Raise unless ``name`` could be given to a new flag."""
        check_name(name, "flag")
        with self._read() as tx:
            existing = tx.get_flag(name)
        if existing is not None:
            where = "an archived flag" if existing.archived else "a flag"
            raise NameConflict(f'{where} named "{name}" already exists')

    def get_flag(self, project: str | None, name: str) -> FlagDetails:
        with self._read() as tx:
            flag = self._active_flag(tx, project, name)
            return self._details(tx, flag)

    def list_flags(self, project: str | None = None) -> list[FlagDefinition]:
        """Active flags, of one project (which must exist: `NotFound` otherwise) or all."""
        with self._read() as tx:
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
        actor: str = SYSTEM,
    ) -> FlagDefinition:
        if type is not None:
            _check_type(type)
        with self._unit() as tx:
            return self._update_flag(
                tx,
                project,
                name,
                type=type,
                description=description,
                impression_data=impression_data,
                stale=stale,
                actor=actor,
            )

    def _update_flag(
        self,
        tx: Transaction,
        project: str,
        name: str,
        *,
        type: str | None = None,
        description: str | None = None,
        impression_data: bool | None = None,
        stale: bool | None = None,
        actor: str,
    ) -> FlagDefinition:
        """`update_flag` inside a unit of work the caller holds (action sets)."""
        before = self._active_flag(tx, project, name)
        after = attrs.evolve(
            before,
            type=before.type if type is None else type,
            description=before.description if description is None else description,
            impression_data=(
                before.impression_data if impression_data is None else impression_data
            ),
            stale=before.stale if stale is None else stale,
        )
        if after == before:
            return after
        tx.save_flag(after)
        kind = "feature-metadata-updated"
        if after.stale != before.stale and (attrs.evolve(after, stale=before.stale) == before):
            kind = "feature-stale-on" if after.stale else "feature-stale-off"
        self._event(tx, kind, actor, flag=after, data=flag_data(after), pre_data=flag_data(before))
        return after

    def mark_stale(
        self, project: str, name: str, stale: bool = True, *, actor: str = SYSTEM
    ) -> FlagDefinition:
        return self.update_flag(project, name, stale=stale, actor=actor)

    def set_dependencies(
        self, project: str, name: str, dependencies: Sequence[Dependency], *, actor: str = SYSTEM
    ) -> FlagDefinition:
        """Replace the flag's parents: one level only, so a parent may not have parents."""
        with self._unit() as tx:
            before = self._active_flag(tx, project, name)
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
            self._event(
                tx,
                "feature-dependencies-updated",
                actor,
                flag=after,
                data={"dependencies": [d.feature for d in after.dependencies]},
            )
        return after

    def archive_flag(self, project: str, name: str, *, actor: str = SYSTEM) -> FlagDefinition:
        with self._unit() as tx:
            flag = self._active_flag(tx, project, name)
            archived = attrs.evolve(flag, archived_at=self.clock())
            tx.save_flag(archived)
            self._event(tx, "feature-archived", actor, flag=archived)
        return archived

    def list_archived_flags(self, project: str | None = None) -> list[FlagDetails]:
        """Archived flags, of one project (which must exist: `NotFound` otherwise) or all."""
        with self._read() as tx:
            if project is not None:
                require_project(tx, project)
            return [
                self._details(tx, flag) for flag in tx.list_flags(project=project, archived=True)
            ]

    def revive_flag(self, name: str, *, actor: str = SYSTEM) -> FlagDefinition:
        """Back from the archive with its strategies, but off in every environment."""
        with self._unit() as tx:
            flag = self._archived_flag(tx, name)
            if tx.get_project(flag.project) is None:
                raise Conflict(
                    f'cannot revive "{name}": its project "{flag.project}" no longer exists'
                )
            revived = attrs.evolve(flag, archived_at=None)
            tx.save_flag(revived)
            for state in tx.list_flag_environments(flag=name):
                if state.enabled:
                    tx.save_flag_environment(attrs.evolve(state, enabled=False))
            self._event(tx, "feature-revived", actor, flag=revived)
        return revived

    def delete_flag(self, name: str, *, actor: str = SYSTEM) -> None:
        """Delete an archived flag for good; an active flag must be archived first."""
        with self._unit() as tx:
            flag = self._archived_flag(tx, name)
            tx.delete_flag(name)
            self._event(tx, "feature-deleted", actor, flag=flag, pre_data=flag_data(flag))

    @staticmethod
    def _archived_flag(tx: Transaction, name: str) -> FlagDefinition:
        flag = tx.get_flag(name)
        if flag is None:
            raise NotFound(f'there is no flag named "{name}"')
        if not flag.archived:
            raise Conflict(f'flag "{name}" is not archived; archive it first')
        return flag

    @staticmethod
    def _details(tx: Transaction, flag: FlagDefinition) -> FlagDetails:
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
