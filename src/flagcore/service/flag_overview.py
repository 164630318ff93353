"""The flags of a project as a list page shows them: filtered, one page at a time; and
the counts of flags a monitoring scrape shows.

Reads over the store port alone (no rule to apply), so the admin UI does not load every
flag's strategies to draw 100 rows: one read of the project's flags, one of the
environment switches and one of the tags, then filtering and slicing in memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Protocol

import attrs

from flagcore.entities import Environment, FlagDefinition, Tag
from flagcore.ports import FlagRepository, ProjectRepository, TagRepository
from flagcore.service.context import ServiceContext
from flagcore.service.projects import require_project

__all__ = ["FlagCounts", "FlagOverview", "FlagOverviews", "FlagQuery", "FlagRow", "FlagSearchPage"]


@attrs.frozen
class FlagRow:
    """One flag of a project's list: its state in every environment and its tags."""

    flag: FlagDefinition
    enabled: Mapping[str, bool] = attrs.field(hash=False)  # by environment name
    tags: tuple[Tag, ...] = ()


@attrs.frozen
class FlagOverview:
    """One page of a project's flags after search and filters, with what the page's
    controls need (environments, tags in use, counts)."""

    rows: tuple[FlagRow, ...]
    matching: int  # flags that pass the filters, on every page
    total: int  # flags in the project
    page: int
    pages: int
    environments: tuple[Environment, ...]
    tags: tuple[Tag, ...]  # every tag in use in the project, for the filter


@attrs.frozen
class FlagCounts:
    """Active flags by project, and those of them on, by project and environment (every
    project and environment present, with 0 when none)."""

    by_project: Mapping[str, int]
    enabled: Mapping[tuple[str, str], int]


@attrs.frozen
class FlagQuery:
    """Which active flags a search across projects keeps: ``text`` in the name or the
    description (case-insensitive), and each filter that is not empty (any of its values)."""

    text: str = ""
    projects: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    tags: tuple[Tag, ...] = ()
    stale: bool | None = None
    sort_by: str = "created_at"  # created_at, name, type or project
    descending: bool = False


SORT_KEYS = ("created_at", "name", "type", "project")


@attrs.frozen
class FlagSearchPage:
    """One slice of the flags of every project that match a `FlagQuery`."""

    rows: tuple[FlagRow, ...]
    matching: int
    environments: tuple[Environment, ...]
    tags: tuple[Tag, ...]  # every tag in use, for a filter


class _OverviewReads(ProjectRepository, FlagRepository, TagRepository, Protocol):
    """The port parts an overview reads."""


class FlagOverviews:
    """Lists and counts of flags, read in one transaction each."""

    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def page(
        self,
        project: str,
        *,
        search: str = "",
        tag: Tag | None = None,
        flag_type: str | None = None,
        page: int = 1,
        per_page: int = 100,
    ) -> FlagOverview:
        """Page ``page`` (from 1; past the end shows the last) of ``project``'s active flags
        whose name contains ``search`` (case-insensitive), with ``tag`` and ``flag_type``."""
        with self._context.read() as tx:
            return _overview(tx, project, search, tag, flag_type, page, per_page)

    def search(self, query: FlagQuery, *, offset: int = 0, limit: int = 50) -> FlagSearchPage:
        """``limit`` flags from ``offset`` of every project's active flags matching
        ``query`` (Unleash's ``/api/admin/search/features``), in three reads."""
        if query.sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by is one of {SORT_KEYS}")
        with self._context.read() as tx:
            flags = tx.list_flags(archived=False)
            tags_of = _tags_by_flag(tx, {flag.name for flag in flags})
            matching = [flag for flag in flags if _kept(flag, query, tags_of)]
            matching.sort(key=lambda f: (getattr(f, query.sort_by), f.name))
            if query.descending:
                matching.reverse()
            shown = matching[offset : offset + limit]
            environments = tuple(tx.list_environments())
            rows = _rows(tx, shown, environments, tags_of)
        in_use = tuple(sorted({t for found in tags_of.values() for t in found}))
        return FlagSearchPage(rows, len(matching), environments, in_use)

    def counts(self) -> FlagCounts:
        """What the server's ``/internal-backstage/prometheus`` gauges show."""
        with self._context.read() as tx:
            projects = [p.id for p in tx.list_projects()]
            environments = [e.name for e in tx.list_environments()]
            flags = {f.name: f.project for f in tx.list_flags(archived=False)}
            states = tx.list_flag_environments()
        totals = dict.fromkeys(projects, 0)
        totals.update(Counter(flags.values()))
        enabled = {(p, e): 0 for p in totals for e in environments}
        on = Counter(
            (flags[s.flag], s.environment) for s in states if s.enabled and s.flag in flags
        )
        enabled.update(on)
        return FlagCounts(totals, enabled)


def _overview(
    tx: _OverviewReads,
    project: str,
    search: str,
    tag: Tag | None,
    flag_type: str | None,
    page: int,
    per_page: int,
) -> FlagOverview:
    require_project(tx, project)
    flags = tx.list_flags(project=project, archived=False)
    environments = tuple(tx.list_environments())
    names = {flag.name for flag in flags}
    tags_of: dict[str, list[Tag]] = {}
    for name, flag_tag in tx.list_flag_tags():
        if name in names:
            tags_of.setdefault(name, []).append(flag_tag)
    needle = search.casefold()
    matching = [
        flag
        for flag in flags
        if (not needle or needle in flag.name.casefold())
        and (flag_type is None or flag.type == flag_type)
        and (tag is None or tag in tags_of.get(flag.name, ()))
    ]
    pages = max(1, -(-len(matching) // per_page))
    page = min(max(1, page), pages)
    shown = matching[(page - 1) * per_page : page * per_page]
    enabled: dict[str, dict[str, bool]] = {flag.name: {} for flag in shown}
    for environment in environments:
        for state in tx.list_flag_environments(environment=environment.name):
            if state.flag in enabled:
                enabled[state.flag][state.environment] = state.enabled
    in_use = sorted({t for found in tags_of.values() for t in found})
    rows = tuple(
        FlagRow(flag, enabled[flag.name], tuple(sorted(tags_of.get(flag.name, ()))))
        for flag in shown
    )
    return FlagOverview(rows, len(matching), len(flags), page, pages, environments, tuple(in_use))


def _tags_by_flag(tx: _OverviewReads, names: set[str]) -> dict[str, list[Tag]]:
    tags_of: dict[str, list[Tag]] = {}
    for name, flag_tag in tx.list_flag_tags():
        if name in names:
            tags_of.setdefault(name, []).append(flag_tag)
    return tags_of


def _kept(flag: FlagDefinition, query: FlagQuery, tags_of: Mapping[str, list[Tag]]) -> bool:
    needle = query.text.casefold()
    return (
        (
            not needle
            or needle in flag.name.casefold()
            or needle in (flag.description or "").casefold()
        )
        and (not query.projects or flag.project in query.projects)
        and (not query.types or flag.type in query.types)
        and (not query.tags or any(t in tags_of.get(flag.name, ()) for t in query.tags))
        and (query.stale is None or flag.stale is query.stale)
    )


def _rows(
    tx: _OverviewReads,
    shown: list[FlagDefinition],
    environments: tuple[Environment, ...],
    tags_of: Mapping[str, list[Tag]],
) -> tuple[FlagRow, ...]:
    enabled: dict[str, dict[str, bool]] = {flag.name: {} for flag in shown}
    for environment in environments:
        for state in tx.list_flag_environments(environment=environment.name):
            if state.flag in enabled:
                enabled[state.flag][state.environment] = state.enabled
    return tuple(
        FlagRow(flag, enabled[flag.name], tuple(sorted(tags_of.get(flag.name, ()))))
        for flag in shown
    )
