"""Copying a whole Unleash (as read through its admin API) into the store, in one unit of
work: projects, environments, custom strategy definitions, tag types, segments, then each
project's flags with every environment's rules (through `flagcore.service.importing`).

Idempotent: what exists already and is the same is left alone, so running the copy twice
changes nothing the second time. Something that exists with another definition (a flag, a
segment) is a conflict, refused as a whole unless ``overwrite``. Definitions that exist
only here are never deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from flagcore.entities import Environment, Project, StrategyDefinition, TagType
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.model import Segment
from flagcore.ports import (
    EventLog,
    ProjectRepository,
    SegmentRepository,
    StrategyDefinitions,
    TagWrite,
    Transaction,
)
from flagcore.service.context import ServiceContext
from flagcore.service.import_apply import apply_import
from flagcore.service.import_plan import ImportPlan, plan_import, too_many
from flagcore.service.strategies import Strategies
from flagcore.service.strategy_definitions import BUILTIN_DEFINITIONS
from flagcore.validation import check_constraints, check_name, check_text
from flagcore.wire.event_data import EnvironmentCreatedData, IdNameData, NameData
from flagcore.wire.unleash_export import FeatureExport

__all__ = ["CopyReport", "InstanceCopy", "KindReport", "copy_instance_in"]


class _ProjectWrite(ProjectRepository, EventLog, Protocol):
    """Projects and environments made, with their events."""


class _DefinitionWrite(StrategyDefinitions, EventLog, Protocol):
    """Custom strategies defined, with their events."""


class _SegmentCopy(ProjectRepository, SegmentRepository, EventLog, Protocol):
    """Segments made or replaced (in projects that exist), with their events."""


@attrs.frozen
class InstanceCopy:
    """Everything read from the source. ``flags`` holds, per project, one export per
    environment (strategies in evaluation order, segments by the source's ids)."""

    projects: tuple[Project, ...] = ()
    environments: tuple[Environment, ...] = ()
    strategy_definitions: tuple[StrategyDefinition, ...] = ()
    tag_types: tuple[TagType, ...] = ()
    segments: tuple[Segment, ...] = ()
    flags: Mapping[str, Mapping[str, FeatureExport]] = attrs.field(factory=dict)


@attrs.frozen
class KindReport:
    """Names created, updated and left unchanged, of one kind of thing."""

    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()


@attrs.frozen
class CopyReport:
    """What a copy did (or, with ``dry_run``, would do), by kind: ``projects``,
    ``environments``, ``strategy definitions``, ``tag types``, ``segments``, ``flags``."""

    kinds: Mapping[str, KindReport]
    dry_run: bool = False


def copy_instance_in(
    context: ServiceContext,
    tx: Transaction,
    strategies: Strategies,
    source: InstanceCopy,
    *,
    overwrite: bool,
    actor: str,
) -> Mapping[str, KindReport]:
    """Apply ``source`` inside ``tx``: all of it, or (raising) none of it.

    Typed on the whole `Transaction`: a copy reads and writes everything a flag and its
    rules are made of (projects, environments, flags, strategies, segments, strategy
    definitions, tags, context fields kept as records, the event log: 8 of the port's 13
    parts); each kind's step below is typed on the parts it uses."""
    kinds = {
        "projects": _projects(context, tx, source.projects, actor),
        "environments": _environments(context, tx, source.environments, actor),
        "strategy definitions": _definitions(context, tx, source.strategy_definitions, actor),
        "tag types": _tag_types(context, tx, source.tag_types, actor),
        "segments": _segments(context, tx, source.segments, overwrite, actor),
    }
    plans: list[ImportPlan] = []
    problems: list[ErrorDetail] = []
    for project, sources in source.flags.items():
        if not sources:
            continue
        plan = plan_import(tx, strategies, project, sources, root=f"project {project}")
        problems.extend(plan.problems)
        plans.append(plan)
    if problems:
        raise InvalidInput(
            f"the source cannot be copied: {problems[0].path}: {problems[0].message}",
            too_many(problems),
        )
    conflicts = [c for plan in plans for c in plan.conflicts]
    if conflicts and not overwrite:
        raise Conflict(
            f"{len(conflicts)} flag(s) exist here with a different definition; nothing was "
            "copied (use --overwrite to replace them)",
            too_many(conflicts),
        )
    created: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    for plan in plans:
        new, changed, same = apply_import(context, tx, plan, actor=actor)
        created += new
        updated += changed
        unchanged += same
    kinds["flags"] = KindReport(tuple(created), tuple(updated), tuple(unchanged))
    return kinds


def _projects(
    context: ServiceContext, tx: _ProjectWrite, projects: Sequence[Project], actor: str
) -> KindReport:
    created, unchanged = [], []
    for project in projects:
        check_name(project.id, "project", "$.projects[].id")
        if tx.get_project(project.id) is not None:
            unchanged.append(project.id)
            continue
        check_text(project.name, "$.projects[].name", optional=False)
        check_text(project.description, "$.projects[].description")
        made = Project(project.id, project.name, project.description, context.clock())
        tx.save_project(made)
        context.record_event(
            tx, "project-created", actor, project=made.id, data=IdNameData(made.id, made.name)
        )
        created.append(project.id)
    return KindReport(tuple(created), (), tuple(unchanged))


def _environments(
    context: ServiceContext, tx: _ProjectWrite, environments: Sequence[Environment], actor: str
) -> KindReport:
    created, unchanged = [], []
    for environment in environments:
        check_name(environment.name, "environment", "$.environments[].name")
        if tx.get_environment(environment.name) is not None:
            unchanged.append(environment.name)
            continue
        tx.save_environment(environment)
        context.record_event(
            tx,
            "environment-created",
            actor,
            environment=environment.name,
            data=EnvironmentCreatedData(environment.type),
        )
        created.append(environment.name)
    return KindReport(tuple(created), (), tuple(unchanged))


def _definitions(
    context: ServiceContext,
    tx: _DefinitionWrite,
    definitions: Sequence[StrategyDefinition],
    actor: str,
) -> KindReport:
    created, unchanged = [], []
    for definition in definitions:
        if definition.name in BUILTIN_DEFINITIONS:
            continue
        check_name(definition.name, "strategy", "$.strategies[].name")
        if tx.get_strategy_definition(definition.name) is not None:
            unchanged.append(definition.name)
            continue
        tx.save_strategy_definition(definition)
        context.record_event(tx, "strategy-created", actor, data=NameData(definition.name))
        created.append(definition.name)
    return KindReport(tuple(created), (), tuple(unchanged))


def _tag_types(
    context: ServiceContext, tx: TagWrite, tag_types: Sequence[TagType], actor: str
) -> KindReport:
    created, unchanged = [], []
    for tag_type in tag_types:
        check_name(tag_type.name, "tag type", "$.tagTypes[].name")
        if tx.get_tag_type(tag_type.name) is not None:
            unchanged.append(tag_type.name)
            continue
        check_text(tag_type.description, "$.tagTypes[].description")
        tx.save_tag_type(tag_type)
        context.record_event(tx, "tag-type-created", actor, data=NameData(tag_type.name))
        created.append(tag_type.name)
    return KindReport(tuple(created), (), tuple(unchanged))


def _segments(
    context: ServiceContext,
    tx: _SegmentCopy,
    segments: Sequence[Segment],
    overwrite: bool,
    actor: str,
) -> KindReport:
    """Segments matched by name (ids differ between servers); a segment here with other
    constraints is a conflict unless ``overwrite``, which replaces its rules."""
    by_name = {s.name: s for s in tx.list_segments()}
    created, updated, unchanged = [], [], []
    conflicts = []
    for segment in segments:
        path = f"$.segments[{segment.name}]"
        try:
            check_text(segment.name, f"{path}.name", optional=False)
            check_constraints(segment.constraints, context.limits, f"{path}.constraints")
            check_text(segment.description, f"{path}.description")
        except FlagcoreError as error:
            raise InvalidInput(
                f"segment {segment.name!r}: {error.message}", error.details
            ) from None
        here = by_name.get(segment.name)
        project = segment.project if segment.project and tx.get_project(segment.project) else None
        if here is None:
            made = tx.create_segment(
                Segment(0, segment.name, segment.constraints, segment.description, project),
                created_by=actor,
                created_at=context.clock(),
            )
            context.record_event(
                tx,
                "segment-created",
                actor,
                project=project,
                data=IdNameData(made.id, made.name),
            )
            created.append(segment.name)
        elif (here.constraints, here.description) == (segment.constraints, segment.description):
            unchanged.append(segment.name)
        elif overwrite:
            tx.save_segment(
                attrs.evolve(here, constraints=segment.constraints, description=segment.description)
            )
            context.record_event(
                tx,
                "segment-updated",
                actor,
                project=here.project,
                data=IdNameData(here.id, here.name),
            )
            updated.append(segment.name)
        else:
            conflicts.append(
                ErrorDetail(
                    f'segment "{segment.name}" exists here with other constraints or description',
                    path,
                )
            )
    if conflicts:
        raise Conflict(
            f"{len(conflicts)} segment(s) exist here with a different definition; nothing was "
            "copied (use --overwrite to replace them)",
            too_many(conflicts),
        )
    return KindReport(tuple(created), tuple(updated), tuple(unchanged))
