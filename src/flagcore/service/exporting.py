"""Exporting flags in Unleash's feature export format, for Unleash's import (or ours).

The export describes one environment, as Unleash's does: each flag's metadata, its
strategies there in evaluation order, whether it is on there and its variants, its tags,
the tag types and segments (by id and name) they use, its dependencies, and a context
field for each field its rules name (as the registry describes it; a field it does not
describe is written by name, so Unleash's import creates it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from flagcore.entities import ContextField, FlagDefinition, Tag
from flagcore.errors import ErrorDetail, NotFound
from flagcore.model import Constraint, Strategy
from flagcore.ports import FlagRead, FlagRepository, Records, SegmentRepository, TagRepository
from flagcore.service.context import ServiceContext
from flagcore.service.context_fields import listed
from flagcore.service.lookups import require_environment, require_project
from flagcore.wire.unleash_export import (
    ExportedContextField,
    ExportedDependencies,
    ExportedEnvironment,
    ExportedFlag,
    ExportedSegment,
    ExportedStrategy,
    ExportedTag,
    ExportedTagType,
    FeatureExport,
)

__all__ = ["Exporting"]

# Stickiness values that name no context field.
_NOT_FIELDS = frozenset({"default", "random"})


class _Tagged(FlagRepository, TagRepository, Protocol):
    """Flags and their tags."""


class _Exported(FlagRead, SegmentRepository, Records, Protocol):
    """Flags with their rules and tags, the segments and tag types they use, and the
    context fields."""


class Exporting:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def export_flags(
        self,
        environment: str,
        *,
        names: Collection[str] | None = None,
        project: str | None = None,
        tag: Tag | None = None,
    ) -> FeatureExport:
        """The active flags of ``environment`` (those ``names``, of ``project``, with
        ``tag``: filters combine with AND; none means every active flag).

        A name in ``names`` that is not an active flag is `NotFound`, naming each."""
        with self._context.read() as tx:
            require_environment(tx, environment)
            if project is not None:
                require_project(tx, project)
            flags = _selected(tx, names, project, tag)
            return _export(tx, environment, flags)


def _selected(
    tx: _Tagged, names: Collection[str] | None, project: str | None, tag: Tag | None
) -> list[FlagDefinition]:
    flags = list(tx.list_flags(project=project, archived=False))
    if names is not None:
        known = {flag.name for flag in flags}
        missing = [name for name in dict.fromkeys(names) if name not in known]
        if missing:
            where = f' in project "{project}"' if project else ""
            raise NotFound(
                f'there is no active flag named "{missing[0]}"{where}',
                [ErrorDetail(f'no active flag "{name}"', "$.features") for name in missing],
            )
        wanted = set(names)
        flags = [flag for flag in flags if flag.name in wanted]
    if tag is not None:
        tagged = {name for name, flag_tag in tx.list_flag_tags() if flag_tag == tag}
        flags = [flag for flag in flags if flag.name in tagged]
    return flags


def _export(tx: _Exported, environment: str, flags: list[FlagDefinition]) -> FeatureExport:
    strategies: list[ExportedStrategy] = []
    states: list[ExportedEnvironment] = []
    tags: list[ExportedTag] = []
    segment_ids: set[int] = set()
    for flag in flags:
        for placement in tx.list_strategies(flag=flag.name, environment=environment):
            strategy = placement.strategy
            segment_ids.update(strategy.segments)
            strategies.append(_exported_strategy(flag.name, strategy))
        state = tx.get_flag_environment(flag.name, environment)
        states.append(
            ExportedEnvironment(
                flag.name,
                state.enabled if state else False,
                environment,
                state.variants if state else (),
            )
        )
        tags.extend(
            ExportedTag(flag.name, t.type, t.value) for _n, t in tx.list_flag_tags(flag.name)
        )
    segments = [s for s in tx.list_segments() if s.id in segment_ids]
    tag_types = [
        ExportedTagType(t.name, t.description)
        for t in tx.list_tag_types()
        if any(tag.tag_type == t.name for tag in tags)
    ]
    return FeatureExport(
        features=tuple(
            ExportedFlag(
                f.name, f.type, f.description, f.project, f.stale, f.impression_data, False
            )
            for f in flags
        ),
        feature_strategies=tuple(strategies),
        feature_environments=tuple(states),
        context_fields=_context_fields(
            {f.name: f for f in listed(tx)},
            strategies,
            [c for s in segments for c in s.constraints],
        ),
        feature_tags=tuple(tags),
        segments=tuple(ExportedSegment(s.id, s.name) for s in segments),
        tag_types=tuple(tag_types),
        dependencies=tuple(
            ExportedDependencies(f.name, f.dependencies) for f in flags if f.dependencies
        ),
    )


def _exported_strategy(flag: str, strategy: Strategy) -> ExportedStrategy:
    return ExportedStrategy(
        flag,
        strategy.name,
        dict(strategy.parameters),
        strategy.constraints,
        strategy.segments,
        strategy.variants,
        strategy.disabled,
        strategy.id,
        strategy.title,
        None,  # the list's order is the evaluation order, as in Unleash's export
    )


def _context_fields(
    described: Mapping[str, ContextField],
    strategies: list[ExportedStrategy],
    segment_constraints: list[Constraint],
) -> tuple[ExportedContextField, ...]:
    """A field for each name the rules use, as the registry describes it; a field it does
    not describe gets its name, and ``stickiness`` when something sticks to it (so
    Unleash's import creates it)."""
    used: dict[str, bool] = {}
    for constraint in segment_constraints:
        used.setdefault(constraint.context_name, False)
    for strategy in strategies:
        for constraint in strategy.constraints:
            used.setdefault(constraint.context_name, False)
        sticky = [v.stickiness for v in strategy.variants]
        sticky.append(strategy.parameters.get("stickiness", "default"))
        for name in sticky:
            if name not in _NOT_FIELDS:
                used[name] = True
    return tuple(
        _exported_field(described[name])
        if name in described
        else ExportedContextField(name, stickiness=sticky)
        for name, sticky in sorted(used.items())
    )


def _exported_field(field: ContextField) -> ExportedContextField:
    return ExportedContextField(
        field.name, field.description, field.legal_values, field.stickiness, field.sort_order
    )
