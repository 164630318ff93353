"""Planning an import of Unleash's feature export: every problem of the file collected
with its JSON path, and every flag compared with what the store has. Reads only; the plan
is applied by `flagcore.service.importing`.

What "conflicting" means: a flag of the same name that exists in the target project with a
different definition: its metadata (type, description, stale, impression data), its
dependencies, its tags, or, in an imported environment, whether it is on, its flag-level
variants, or its strategies (compared in order, ignoring strategy ids). An environment
where the flag has no rules yet (off, no strategy, no variant) is filled in without
conflict, so one file can be imported into several environments. An identical flag is
left alone. A flag of the same name in another project, or archived, is a problem (not a
conflict that ``overwrite`` could settle).

Strategies keep the order of the file: Unleash's export lists them in evaluation order
(``sortOrder`` null), and the strategy a user matches first decides which variant they get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol

import attrs

from flagcore.entities import ContextField, FlagDefinition, Tag, TagType
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.model import Dependency, FlagType, Strategy, Variant
from flagcore.ports import FlagRead, FlagRepository, Records, SegmentRepository, StrategyChecks
from flagcore.service.context_fields import checked_context_field, found_context_field
from flagcore.service.lookups import require_environment, require_project
from flagcore.service.strategies import Strategies
from flagcore.service.tags import TAG_VALUE_LENGTH
from flagcore.service.variants import variants_in_unleash_order
from flagcore.validation import check_name, check_text, check_variants
from flagcore.wire.converter import MAX_ERROR_DETAILS
from flagcore.wire.unleash_export import FeatureExport

__all__ = ["EnvironmentRules", "FlagPlan", "ImportCheck", "ImportPlan", "plan_import", "too_many"]

_FLAG_TYPES = tuple(t.value for t in FlagType)
Action = Literal["create", "update", "unchanged"]
_VERBS = {"create": "creates", "update": "fills environments of", "unchanged": "leaves unchanged"}


class _ImportReads(FlagRead, StrategyChecks, Records, Protocol):
    """What an import is checked against: the project and environments, flags with their
    rules and tags, segments, strategies defined, context fields (7 of the port's 13
    parts, read only)."""


@attrs.frozen
class ImportCheck:
    """What a validation finds: problems that refuse the file, existing flags that differ
    (refused unless overwriting), and warnings (what the import will change)."""

    errors: tuple[ErrorDetail, ...] = ()
    conflicts: tuple[ErrorDetail, ...] = ()
    warnings: tuple[str, ...] = ()


@attrs.frozen
class EnvironmentRules:
    enabled: bool
    variants: tuple[Variant, ...]
    strategies: tuple[Strategy, ...]


@attrs.frozen
class FlagPlan:
    definition: FlagDefinition
    environments: Mapping[str, EnvironmentRules]
    tags: tuple[Tag, ...]
    action: Action
    differences: tuple[str, ...] = ()
    path: str = "$"
    # An update that only fills environments where the flag had no rules yet (not on, no
    # strategy, no variant) conflicts with nothing: importing one file into a second
    # environment is not a conflict.
    conflicting: bool = False


@attrs.define
class ImportPlan:
    """The checked file against the store: what to create, update or leave alone."""

    project: str
    problems: list[ErrorDetail] = attrs.Factory(list)
    flags: list[FlagPlan] = attrs.Factory(list)
    tag_types: list[TagType] = attrs.Factory(list)
    context_fields: list[ContextField] = attrs.Factory(list)

    @property
    def conflicts(self) -> list[ErrorDetail]:
        return [
            ErrorDetail(
                f'flag "{p.definition.name}" exists with a different definition '
                f"({', '.join(p.differences)}); import with overwrite to replace it",
                p.path,
            )
            for p in self.flags
            if p.conflicting
        ]

    def check(self) -> ImportCheck:
        warnings = [f"creates tag type {t.name!r}" for t in self.tag_types]
        warnings += [f"creates context field {f.name!r}" for f in self.context_fields]
        warnings += [
            f"{_VERBS[p.action]} flag {p.definition.name!r}"
            for p in self.flags
            if not p.conflicting
        ]
        return ImportCheck(tuple(self.problems), tuple(self.conflicts), tuple(warnings))


def too_many(details: Sequence[ErrorDetail]) -> list[ErrorDetail]:
    """At most `MAX_ERROR_DETAILS` details: a file of 100,000 problems gets a short answer."""
    if len(details) <= MAX_ERROR_DETAILS:
        return list(details)
    more = len(details) - MAX_ERROR_DETAILS
    return [*details[:MAX_ERROR_DETAILS], ErrorDetail(f"and {more} more problems")]


def _shown(text: str) -> str:
    """A name from the file, quoted and cut short: error messages echo bounded text."""
    return f'"{text[:100]}…"' if len(text) > 100 else f'"{text}"'


def _rebased(error: FlagcoreError, root: str) -> list[ErrorDetail]:
    """``error``'s details with their paths (relative to the checked item, ``$...``) put
    under ``root``, the item's place in the file."""
    if not error.details:
        return [ErrorDetail(error.message, root)]
    return [
        ErrorDetail(d.message, root + d.path[1:] if d.path and d.path.startswith("$") else root)
        for d in error.details
    ]


def plan_import(
    tx: _ImportReads,
    strategies: Strategies,
    project: str,
    sources: Mapping[str, FeatureExport],
    *,
    root: str = "$",
) -> ImportPlan:
    """Check ``sources`` (one export per environment, all for ``project``) against the
    store and compare each flag with what is stored. Reads only.

    ``root`` prefixes every path (``$`` for a file; an instance copy names the project and
    environment it read)."""
    require_project(tx, project)
    plan = ImportPlan(project)
    problems = plan.problems
    known_tag_types = {t.name for t in tx.list_tag_types()}
    wanted: dict[str, tuple[FlagDefinition, str]] = {}
    rules: dict[str, dict[str, EnvironmentRules]] = {}
    tags: dict[str, list[Tag]] = {}
    for environment, export in sources.items():
        require_environment(tx, environment)
        base = root if len(sources) == 1 else f"{root}[{environment}]"
        names = _check_flags(tx, project, export, base, problems, wanted)
        for index, tag_type in enumerate(export.tag_types):
            if tag_type.name not in known_tag_types:
                try:
                    check_name(tag_type.name, "tag type", f"{base}.tagTypes[{index}].name")
                    check_text(tag_type.description, f"{base}.tagTypes[{index}].description")
                except InvalidInput as error:
                    problems.extend(error.details)
                    continue
                known_tag_types.add(tag_type.name)
                plan.tag_types.append(TagType(tag_type.name, tag_type.description))
        _check_tags(export, base, names, known_tag_types, problems, tags)
        _plan_context_fields(tx, export, base, plan)
        segment_ids = _segment_ids(tx, export, base, problems)
        states = _environment_states(export, base, names, problems)
        for name in names:
            enabled, variants = states.get(name, (False, ()))
            rules.setdefault(name, {})[environment] = EnvironmentRules(enabled, variants, ())
        _prepare_strategies(
            tx, strategies, export, base, names, segment_ids, wanted, rules, environment, problems
        )
        _check_dependencies(tx, project, export, base, names, wanted, problems)
    if problems:
        return plan
    for name, (definition, path) in wanted.items():
        plan.flags.append(_compare(tx, definition, rules[name], tuple(tags.get(name, ())), path))
    return plan


def _plan_context_fields(tx: Records, export: FeatureExport, base: str, plan: ImportPlan) -> None:
    """Unleash's rule: a field new here is created as the file describes it; a field
    known here is left as it is, but must already allow every legal value the file
    gives it (otherwise the file's rules could want a value the field refuses)."""
    planned = {f.name: f for f in plan.context_fields}
    for index, exported in enumerate(export.context_fields):
        path = f"{base}.contextFields[{index}]"
        known = planned.get(exported.name) or found_context_field(tx, exported.name)
        if known is None:
            field = ContextField(
                exported.name,
                exported.description,
                exported.legal_values,
                exported.stickiness,
                10 if exported.sort_order is None else exported.sort_order,
            )
            try:
                checked_context_field(field, path)
            except InvalidInput as error:
                plan.problems.extend(error.details)
                continue
            planned[field.name] = field
            plan.context_fields.append(field)
            continue
        allowed = {v.value for v in known.legal_values}
        plan.problems.extend(
            ErrorDetail(
                f"context field {_shown(exported.name)} here does not allow "
                f"{_shown(legal.value)}; add it to the field first",
                f"{path}.legalValues[{at}].value",
            )
            for at, legal in enumerate(exported.legal_values)
            if legal.value not in allowed
        )


def _check_flags(
    tx: FlagRepository,
    project: str,
    export: FeatureExport,
    base: str,
    problems: list[ErrorDetail],
    wanted: dict[str, tuple[FlagDefinition, str]],
) -> dict[str, str]:
    """The file's flags by name (each with its path); their metadata goes to ``wanted``."""
    names: dict[str, str] = {}
    for index, flag in enumerate(export.features):
        path = f"{base}.features[{index}]"
        try:
            check_name(flag.name, "flag", f"{path}.name")
            check_text(flag.description, f"{path}.description")
        except InvalidInput as error:
            problems.extend(error.details)
            continue
        if flag.name in names:
            problems.append(ErrorDetail(f'flag "{flag.name}" appears twice', f"{path}.name"))
            continue
        if flag.type not in _FLAG_TYPES:
            problems.append(ErrorDetail(f"must be one of {', '.join(_FLAG_TYPES)}", f"{path}.type"))
        names[flag.name] = path
        existing = tx.get_flag(flag.name)
        if existing is not None and existing.project != project:
            problems.append(
                ErrorDetail(
                    f'flag "{flag.name}" already exists in project "{existing.project}"',
                    f"{path}.name",
                )
            )
        elif existing is not None and existing.archived:
            problems.append(
                ErrorDetail(
                    f'an archived flag named "{flag.name}" exists; revive or delete it first',
                    f"{path}.name",
                )
            )
        if flag.name not in wanted:
            definition = FlagDefinition(
                flag.name,
                project,
                flag.type,
                flag.description,
                flag.stale,
                flag.impression_data,
            )
            wanted[flag.name] = (definition, path)
    return names


def _check_tags(
    export: FeatureExport,
    base: str,
    names: Mapping[str, str],
    known_tag_types: set[str],
    problems: list[ErrorDetail],
    tags: dict[str, list[Tag]],
) -> None:
    low, high = TAG_VALUE_LENGTH
    for index, tag in enumerate(export.feature_tags):
        path = f"{base}.featureTags[{index}]"
        if tag.feature_name not in names:
            problems.append(_not_in_file(tag.feature_name, f"{path}.featureName"))
            continue
        if tag.tag_type not in known_tag_types:
            problems.append(
                ErrorDetail(
                    f"unknown tag type {_shown(tag.tag_type)}: not in tagTypes, not on this server",
                    f"{path}.tagType",
                )
            )
            continue
        value = tag.tag_value.strip()
        if not low <= len(value) <= high:
            problems.append(ErrorDetail(f"{low} to {high} characters", f"{path}.tagValue"))
            continue
        flag_tags = tags.setdefault(tag.feature_name, [])
        if Tag(tag.tag_type, value) not in flag_tags:
            flag_tags.append(Tag(tag.tag_type, value))


def _segment_ids(
    tx: SegmentRepository, export: FeatureExport, base: str, problems: list[ErrorDetail]
) -> dict[int, int]:
    """The exporter's segment ids mapped to this store's, by name. As in Unleash, the
    segments must exist here first (an export carries no constraints for them)."""
    local = {segment.name: segment.id for segment in tx.list_segments()}
    mapped: dict[int, int] = {}
    missing = [(i, s.name) for i, s in enumerate(export.segments) if s.name not in local]
    for index, name in missing:
        problems.append(
            ErrorDetail(
                f"Unsupported segments: segment {_shown(name)} does not exist here; "
                "create it first",
                f"{base}.segments[{index}].name",
            )
        )
    for segment in export.segments:
        if segment.name in local:
            mapped[segment.id] = local[segment.name]
    return mapped


def _environment_states(
    export: FeatureExport, base: str, names: Mapping[str, str], problems: list[ErrorDetail]
) -> dict[str, tuple[bool, tuple[Variant, ...]]]:
    states: dict[str, tuple[bool, tuple[Variant, ...]]] = {}
    for index, state in enumerate(export.feature_environments):
        path = f"{base}.featureEnvironments[{index}]"
        if state.feature_name not in names:
            problems.append(_not_in_file(state.feature_name, f"{path}.featureName"))
            continue
        if state.feature_name in states:
            problems.append(
                ErrorDetail(
                    f"flag {_shown(state.feature_name)} appears twice", f"{path}.featureName"
                )
            )
            continue
        try:
            check_variants(state.variants, "$.variants")
            variants = variants_in_unleash_order(state.variants)
        except FlagcoreError as error:
            problems.extend(_rebased(error, path))
            continue
        states[state.feature_name] = (state.enabled, variants)
    return states


def _prepare_strategies(
    tx: StrategyChecks,
    strategies: Strategies,
    export: FeatureExport,
    base: str,
    names: Mapping[str, str],
    segment_ids: Mapping[int, int],
    wanted: Mapping[str, tuple[FlagDefinition, str]],
    rules: dict[str, dict[str, EnvironmentRules]],
    environment: str,
    problems: list[ErrorDetail],
) -> None:
    """Each strategy checked and normalised as `Strategies.add_strategy` stores it, in the
    file's order (its position is its sort order)."""
    placed: dict[str, list[Strategy]] = {}
    listed = {segment.id for segment in export.segments}
    for index, exported in enumerate(export.feature_strategies):
        path = f"{base}.featureStrategies[{index}]"
        if exported.feature_name not in names:
            problems.append(_not_in_file(exported.feature_name, f"{path}.featureName"))
            continue
        unknown = [i for i, s in enumerate(exported.segments) if s not in listed]
        problems.extend(
            ErrorDetail(
                f"segment {exported.segments[position]} is not in the export's segments",
                f"{path}.segments[{position}]",
            )
            for position in unknown
        )
        if unknown or any(s not in segment_ids for s in exported.segments):
            continue  # a segment missing here is reported once, at $.segments
        mapped = tuple(segment_ids[s] for s in exported.segments)
        flag_strategies = placed.setdefault(exported.feature_name, [])
        # A fresh id: the exporter's would collide when one file is imported into two
        # environments (strategy ids are unique in a store).
        strategy = attrs.evolve(exported.strategy(mapped), id=None)
        definition = wanted[exported.feature_name][0]
        try:
            flag_strategies.append(
                strategies.prepared_in(tx, definition, strategy, len(flag_strategies))
            )
        except FlagcoreError as error:
            problems.extend(_rebased(error, path))
    for name, flag_strategies in placed.items():
        current = rules[name][environment]
        rules[name][environment] = attrs.evolve(current, strategies=tuple(flag_strategies))


def _check_dependencies(
    tx: FlagRepository,
    project: str,
    export: FeatureExport,
    base: str,
    names: Mapping[str, str],
    wanted: dict[str, tuple[FlagDefinition, str]],
    problems: list[ErrorDetail],
) -> None:
    """Unleash's rules: a parent is an active flag of the same project (in the file or
    already here), one level deep (a parent has no parents, a child is nobody's parent)."""
    in_file = {d.feature: d.dependencies for d in export.dependencies if d.feature in names}
    parents = _parents_after_import(tx, project, in_file, names)
    for index, entry in enumerate(export.dependencies):
        path = f"{base}.dependencies[{index}]"
        if entry.feature not in names:
            problems.append(_not_in_file(entry.feature, f"{path}.feature"))
            continue
        for position, dependency in enumerate(entry.dependencies):
            where = f"{path}.dependencies[{position}].feature"
            problem = _dependency_problem(tx, project, entry.feature, dependency, in_file, names)
            if problem is not None:
                problems.append(ErrorDetail(problem, where))
        if entry.dependencies and entry.feature in parents:
            problems.append(
                ErrorDetail(
                    f"other flags depend on {_shown(entry.feature)}; "
                    "dependencies are one level deep",
                    f"{path}.feature",
                )
            )
        definition, flag_path = wanted[entry.feature]
        wanted[entry.feature] = (
            attrs.evolve(definition, dependencies=entry.dependencies),
            flag_path,
        )


def _dependency_problem(
    tx: FlagRepository,
    project: str,
    child: str,
    dependency: Dependency,
    in_file: Mapping[str, tuple[Dependency, ...]],
    names: Mapping[str, str],
) -> str | None:
    parent = dependency.feature
    if parent == child:
        return "a flag cannot depend on itself"
    if in_file.get(parent):
        return f"{_shown(parent)} depends on other flags itself; dependencies are one level deep"
    if parent in names:
        return None
    stored = tx.get_flag(parent)
    if stored is None or stored.archived or stored.project != project:
        return f'{_shown(parent)} is not in the file nor an active flag of project "{project}"'
    if stored.dependencies:
        return f"{_shown(parent)} depends on other flags itself; dependencies are one level deep"
    return None


def _parents_after_import(
    tx: FlagRepository,
    project: str,
    in_file: Mapping[str, tuple[Dependency, ...]],
    names: Mapping[str, str],
) -> set[str]:
    """The flags others will depend on after the import: parents named in the file, and
    those of flags stored here that the file does not redefine (the file's flags get its
    dependencies). Read once per check, not once per entry."""
    parents = {d.feature for deps in in_file.values() for d in deps}
    parents.update(
        d.feature
        for flag in tx.list_flags(project=project)
        if flag.name not in names
        for d in flag.dependencies
    )
    return parents


def _not_in_file(name: str, path: str) -> ErrorDetail:
    return ErrorDetail(f"flag {_shown(name)} is not among the export's features", path)


def _comparable(strategies: Iterable[Strategy]) -> list[Strategy]:
    return [attrs.evolve(s, id=None, sort_order=None) for s in strategies]


def _compare(
    tx: FlagRead,
    definition: FlagDefinition,
    environments: Mapping[str, EnvironmentRules],
    tags: tuple[Tag, ...],
    path: str,
) -> FlagPlan:
    existing = tx.get_flag(definition.name)
    if existing is None:
        return FlagPlan(definition, environments, tags, "create", path=path)
    differences: list[str] = []
    filled: list[str] = []
    metadata = ("type", "description", "stale", "impression_data")
    if any(getattr(existing, a) != getattr(definition, a) for a in metadata):
        differences.append("metadata")
    if existing.dependencies != definition.dependencies:
        differences.append("dependencies")
    if {tag for _n, tag in tx.list_flag_tags(definition.name)} != set(tags):
        differences.append("tags")
    for environment, wanted in environments.items():
        state = tx.get_flag_environment(definition.name, environment)
        stored = [
            p.strategy for p in tx.list_strategies(flag=definition.name, environment=environment)
        ]
        empty = not stored and not (state and (state.enabled or state.variants))
        found = differences if not empty else filled
        if (state.enabled if state else False) != wanted.enabled:
            found.append(f"on/off in {environment}")
        if (state.variants if state else ()) != wanted.variants:
            found.append(f"variants in {environment}")
        if _comparable(stored) != _comparable(wanted.strategies):
            found.append(f"strategies in {environment}")
    kept = attrs.evolve(definition, created_at=existing.created_at)
    action: Action = "update" if differences or filled else "unchanged"
    return FlagPlan(kept, environments, tags, action, tuple(differences), path, bool(differences))
