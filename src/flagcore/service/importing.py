"""Importing Unleash's feature export into a project: checked as a whole
(`flagcore.service.import_plan`), applied in one unit of work, idempotent.

Only a plan with no problem is applied (`apply_import`), inside the transaction it was
planned in, so nothing is half-imported. A plan whose flags conflict (exist here with a
different definition) is refused, naming each flag and what differs, unless ``overwrite``
is given, which replaces their definition and their rules in the imported environments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from flagcore.errors import Conflict, InvalidInput
from flagcore.ports import Transaction
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.import_apply import apply_import
from flagcore.service.import_plan import (
    ImportCheck,
    ImportPlan,
    plan_import,
    too_many,
)
from flagcore.service.instance_copy import CopyReport, InstanceCopy, copy_instance_in
from flagcore.service.strategies import Strategies
from flagcore.wire.unleash_export import FeatureExport

__all__ = [
    "ImportReport",
    "Importing",
    "apply_import",
    "raise_for",
    "run_then_roll_back",
]

_R = TypeVar("_R")


@attrs.frozen
class ImportReport:
    """What an import did (or, with ``dry_run``, would do), by flag name."""

    project: str
    environments: tuple[str, ...]
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    tag_types_created: tuple[str, ...] = ()
    dry_run: bool = False


class _DryRun(Exception):
    """Raised inside the unit of work to roll a dry run back."""


def raise_for(plan: ImportPlan, *, overwrite: bool) -> None:
    """`InvalidInput` for a file with problems (every one, with its path), `Conflict` for
    existing flags that differ, unless ``overwrite``."""
    if plan.problems:
        details = too_many(plan.problems)
        first = details[0]
        raise InvalidInput(
            f"the import was refused: {first.path}: {first.message}"
            + (f" (and {len(plan.problems) - 1} more problems)" if len(plan.problems) > 1 else ""),
            details,
        )
    conflicts = plan.conflicts
    if conflicts and not overwrite:
        names = ", ".join(p.definition.name for p in plan.flags if p.conflicting)
        raise Conflict(
            f"{len(conflicts)} flag(s) exist with a different definition: {names[:500]}; "
            "nothing was imported (import with overwrite to replace them)",
            too_many(conflicts),
        )


class Importing:
    """Imports of Unleash's export format into one project and environment."""

    def __init__(self, context: ServiceContext, *, strategies: Strategies) -> None:
        self._context = context
        self._strategies = strategies

    def validate(self, project: str, environment: str, export: FeatureExport) -> ImportCheck:
        """What an import of ``export`` would meet, without writing anything."""
        with self._context.read() as tx:
            return plan_import(tx, self._strategies, project, {environment: export}).check()

    def import_export(
        self,
        project: str,
        environment: str,
        export: FeatureExport,
        *,
        overwrite: bool = False,
        dry_run: bool = False,
        actor: Actor = SYSTEM,
    ) -> ImportReport:
        """Import ``export`` into ``project`` and ``environment``: all of it or nothing.

        Refused as a whole (`InvalidInput`, every problem with its JSON path) when the file
        breaks a rule, and (`Conflict`) when a flag exists with another definition, unless
        ``overwrite``. ``dry_run`` does everything but commit, and reports the same.
        """
        person = actor
        actor = authorize(actor, "import_export", project=project, environment=environment)

        # The whole `Transaction`: the plan reads 7 of the port's parts, its writing 7.
        def work(tx: Transaction) -> ImportReport:
            # A person's import into an environment under change requests would change it
            # directly: refused as their direct changes are (the CLI's import goes through).
            refuse_direct_change(tx, person, project, environment)
            plan = plan_import(tx, self._strategies, project, {environment: export})
            raise_for(plan, overwrite=overwrite)
            created, updated, unchanged = apply_import(self._context, tx, plan, actor=actor)
            return ImportReport(
                project,
                (environment,),
                tuple(created),
                tuple(updated),
                tuple(unchanged),
                tuple(t.name for t in plan.tag_types),
                dry_run,
            )

        return run_then_roll_back(self._context, work, dry_run=dry_run)

    def copy_instance(
        self,
        source: InstanceCopy,
        *,
        overwrite: bool = False,
        dry_run: bool = False,
        actor: Actor = SYSTEM,
    ) -> CopyReport:
        """Copy a whole Unleash read through its admin API (see
        `flagcore.service.instance_copy`): all of it or nothing; ``dry_run`` reports what
        would change and keeps nothing."""
        actor = authorize(actor, "copy_instance")

        def work(tx: Transaction) -> CopyReport:
            kinds = copy_instance_in(
                self._context, tx, self._strategies, source, overwrite=overwrite, actor=actor
            )
            return CopyReport(kinds, dry_run)

        return run_then_roll_back(self._context, work, dry_run=dry_run)


def run_then_roll_back(
    context: ServiceContext, work: Callable[[Transaction], _R], *, dry_run: bool
) -> _R:
    """``work`` in one unit of work, committed, or rolled back when ``dry_run``."""
    result: list[_R] = []
    try:
        with context.unit() as tx:
            result.append(work(tx))
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return result[0]
